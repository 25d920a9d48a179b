// Writers of real JPEG and PNG files for the image_folder tests, through libjpeg-turbo's and
// libpng's encoders (the build machines have no image datasets), and a small folder of classes.
// The images are smooth colour gradients (JPEG keeps them within a few levels) with a class-
// dependent bright square, so a model can learn the classes. Errors throw std::runtime_error.
#pragma once

#include <jpeglib.h>
#include <png.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace qgrad_test {

// Pixels of a height x width image of `channels` channels, HWC.
struct TestImage {
  int height = 0, width = 0, channels = 3;
  std::vector<unsigned char> pixels;
};

// A smooth image: channel c is a gradient in a direction depending on c and `seed`, plus a
// bright square whose place depends on `seed`.
inline TestImage gradient_image(int height, int width, int channels, int seed) {
  TestImage img{height, width, channels,
                std::vector<unsigned char>(static_cast<std::size_t>(height) * width * channels)};
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < channels; ++c) {
        int v = (c == 0   ? x * 200 / width
                 : c == 1 ? y * 200 / height
                          : (x + y) * 100 / (width + height)) +
                (seed * 37 + c * 11) % 40;
        const int s = height / 3, y0 = (seed % 2) * (height - s), x0 = (seed / 2 % 2) * (width - s);
        if (y >= y0 && y < y0 + s && x >= x0 && x < x0 + s) v = 250 - c * 20;
        img.pixels[(static_cast<std::size_t>(y) * width + x) * channels + c] =
            static_cast<unsigned char>(v);
      }
  return img;
}

// Writes `img` (1 or 3 channels) as a baseline JPEG of `quality`.
inline void write_jpeg(const std::string& path, const TestImage& img, int quality = 95) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) throw std::runtime_error("write_jpeg: cannot open " + path);
  jpeg_compress_struct cinfo;
  jpeg_error_mgr err;
  cinfo.err = jpeg_std_error(&err);  // an encoder error in a test exits: the input is ours
  jpeg_create_compress(&cinfo);
  jpeg_stdio_dest(&cinfo, f);
  cinfo.image_width = static_cast<JDIMENSION>(img.width);
  cinfo.image_height = static_cast<JDIMENSION>(img.height);
  cinfo.input_components = img.channels;
  cinfo.in_color_space = img.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  const std::size_t stride = static_cast<std::size_t>(img.width) * img.channels;
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<unsigned char*>(img.pixels.data()) + stride * cinfo.next_scanline;
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::fclose(f);
}

// Writes 8- or 16-bit samples as a PNG of `color_type` (PNG_COLOR_TYPE_GRAY, _GRAY_ALPHA, _RGB,
// _RGB_ALPHA or _PALETTE with `palette`); `samples` holds height x width x channels values.
inline void write_png(const std::string& path, int height, int width, int color_type, int bit_depth,
                      const std::vector<std::uint16_t>& samples,
                      const std::vector<png_color>& palette = {}) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) throw std::runtime_error("write_png: cannot open " + path);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    std::fclose(f);
    throw std::runtime_error("write_png: libpng failed on " + path);
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height),
               bit_depth, color_type, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (color_type == PNG_COLOR_TYPE_PALETTE)
    png_set_PLTE(png, info, palette.data(), static_cast<int>(palette.size()));
  png_write_info(png, info);
  const int channels = png_get_channels(png, info);
  const std::size_t row_bytes = png_get_rowbytes(png, info);
  std::vector<unsigned char> row(row_bytes);
  for (int y = 0; y < height; ++y) {
    std::fill(row.begin(), row.end(), 0);
    for (int i = 0; i < width * channels; ++i) {
      const std::uint16_t v = samples[static_cast<std::size_t>(y) * width * channels + i];
      if (bit_depth == 16) {
        row[2 * i] = static_cast<unsigned char>(v >> 8);
        row[2 * i + 1] = static_cast<unsigned char>(v & 0xFF);
      } else if (bit_depth == 8) {
        row[i] = static_cast<unsigned char>(v);
      } else {  // 1, 2, 4 bits: packed from the most significant bit
        const int per_byte = 8 / bit_depth, shift = 8 - bit_depth * (1 + i % per_byte);
        row[i / per_byte] |= static_cast<unsigned char>(v << shift);
      }
    }
    png_write_row(png, row.data());
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  std::fclose(f);
}

// Writes `img` as an 8-bit grey or RGB PNG.
inline void write_png(const std::string& path, const TestImage& img) {
  write_png(path, img.height, img.width,
            img.channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB, 8,
            std::vector<std::uint16_t>(img.pixels.begin(), img.pixels.end()));
}

// A folder of `classes` class folders c0, c1, ..., each with `per_class` images of varying size
// around height x width, alternately JPEG and PNG (so both decoders are exercised).
inline void write_image_folder(const std::string& dir, int classes, int per_class, int height,
                               int width) {
  for (int k = 0; k < classes; ++k) {
    const std::string cls = dir + "/c" + std::to_string(k);
    std::filesystem::create_directories(cls);
    for (int i = 0; i < per_class; ++i) {
      const TestImage img = gradient_image(height + (i % 3) * 4, width + (i % 2) * 6, 3, k);
      const std::string stem = cls + "/img" + std::to_string(i);
      if (i % 2 == 0)
        write_jpeg(stem + ".jpg", img);
      else
        write_png(stem + ".png", img);
    }
  }
}

}  // namespace qgrad_test
