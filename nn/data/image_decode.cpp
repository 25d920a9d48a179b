// JPEG (libjpeg-turbo) and PNG (libpng) decoding into 8-bit grey or RGB. Both libraries report a
// fatal error by calling a handler that must not return; ours longjmp back to the function that
// called setjmp. Those functions (decode_jpeg_c, decode_png_c) hold only C objects and write into
// a buffer their caller owns, so the jump skips no C++ destructor; the caller throws.
#include "nn/data/image_decode.h"

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/error.h"

#ifdef QGRAD_WITH_IMAGES
#include <jpeglib.h>
// After jpeglib.h, which it needs.
#include <jerror.h>
#include <png.h>
#endif

namespace qgrad::data {

namespace {

bool is_jpeg(const std::string& b) {
  return b.size() >= 3 && static_cast<unsigned char>(b[0]) == 0xFF &&
         static_cast<unsigned char>(b[1]) == 0xD8 && static_cast<unsigned char>(b[2]) == 0xFF;
}

bool is_png(const std::string& b) {
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  return b.size() >= 8 && std::memcmp(b.data(), sig, 8) == 0;
}

#ifdef QGRAD_WITH_IMAGES

// What a decoder hands back besides the pixels: the size, or the reason it failed.
struct DecodeResult {
  std::int64_t height = 0, width = 0;
  char error[JMSG_LENGTH_MAX + 64] = {0};
};

// The pixel buffer, owned by the C++ caller: the decoders ask it for the bytes once they know the
// size (a plain callback, so the setjmp frames hold no C++ object). It returns null instead of
// throwing: an exception must not leave a decoder without its library's cleanup.
using Allocate = unsigned char* (*)(void* owner, std::size_t bytes);

bool too_large(std::int64_t h, std::int64_t w, DecodeResult* r) {
  if (h > 0 && w > 0 && h <= kMaxImagePixels / w) return false;
  std::snprintf(r->error, sizeof r->error, "%lld x %lld pixels (at most %lld)",
                static_cast<long long>(w), static_cast<long long>(h),
                static_cast<long long>(kMaxImagePixels));
  return true;
}

// ---- JPEG ----

struct JpegErrorManager {
  jpeg_error_mgr base;  // first, so libjpeg's j_common_ptr->err points at the whole struct
  std::jmp_buf jump;
};

[[noreturn]] void jpeg_fail(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  std::longjmp(e->jump, 1);
}

// Warnings about the compressed data (truncated, corrupt entropy-coded segments) are errors: the
// image would come out partly grey. Other warnings (extraneous bytes, odd markers) are ignored.
void jpeg_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  const int code = cinfo->err->msg_code;
  if (code == JWRN_JPEG_EOF || code == JWRN_HIT_MARKER || code == JWRN_HUFF_BAD_CODE ||
      code == JWRN_MUST_RESYNC || code == JWRN_NOT_SEQUENTIAL)
    jpeg_fail(cinfo);
}

bool decode_jpeg_c(const unsigned char* data, std::size_t size, int channels, Allocate allocate,
                   void* owner, DecodeResult* r) {
  jpeg_decompress_struct cinfo;
  JpegErrorManager err;
  cinfo.err = jpeg_std_error(&err.base);
  err.base.error_exit = jpeg_fail;
  err.base.emit_message = jpeg_message;
  if (setjmp(err.jump)) {
    err.base.format_message(reinterpret_cast<j_common_ptr>(&cinfo), r->error);
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    std::snprintf(r->error, sizeof r->error, "a CMYK JPEG (only grey and colour are supported)");
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  if (too_large(cinfo.image_height, cinfo.image_width, r)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  cinfo.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&cinfo);
  r->height = cinfo.output_height;
  r->width = cinfo.output_width;
  const std::size_t stride = static_cast<std::size_t>(cinfo.output_width) * channels;
  unsigned char* out = allocate(owner, stride * cinfo.output_height);
  if (out == nullptr) {
    std::snprintf(r->error, sizeof r->error, "out of memory");
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out + stride * cinfo.output_scanline;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

// ---- PNG ----

struct PngSource {
  const unsigned char* data;
  std::size_t size, at;
  DecodeResult* result;
};

void png_read_bytes(png_structp png, png_bytep out, png_size_t n) {
  auto* s = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > s->size - s->at) png_error(png, "truncated (the file ends early)");
  std::memcpy(out, s->data + s->at, n);
  s->at += n;
}

[[noreturn]] void png_fail(png_structp png, png_const_charp message) {
  auto* s = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(s->result->error, sizeof s->result->error, "%s", message);
  png_longjmp(png, 1);
}

void png_warn(png_structp, png_const_charp) {}  // ancillary-chunk problems: the pixels are fine

bool decode_png_c(const unsigned char* data, std::size_t size, int channels, Allocate allocate,
                  void* owner, DecodeResult* r) {
  PngSource src{data, size, 0, r};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_fail, png_warn);
  if (png == nullptr) {
    std::snprintf(r->error, sizeof r->error, "libpng could not start");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  // Row pointers: one allocation for all rows, freed on every path.
  png_bytep* volatile rows = nullptr;  // volatile: read after the longjmp
  if (setjmp(png_jmpbuf(png))) {
    std::free(rows);
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  if (info == nullptr) png_error(png, "libpng could not start");
  png_set_read_fn(png, &src, png_read_bytes);
  png_set_user_limits(png, 1u << 16, 1u << 16);
  png_read_info(png, info);
  const png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  if (too_large(h, w, r)) png_longjmp(png, 1);
  const int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
  const bool grey = (color & PNG_COLOR_MASK_COLOR) == 0;
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (grey && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (depth == 16) png_set_strip_16(png);
  if (color & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(png);
  if (grey && channels == 3) png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  // Colour read for a grey result: RGB rows, reduced to luma below (in place, front to back).
  const int read_channels = grey ? channels : 3;
  if (png_get_rowbytes(png, info) != static_cast<png_size_t>(w) * read_channels)
    png_error(png, "unexpected row layout after conversion");
  const std::size_t stride = static_cast<std::size_t>(w) * read_channels;
  unsigned char* out = allocate(owner, stride * h);
  if (out == nullptr) png_error(png, "out of memory");
  rows = static_cast<png_bytepp>(std::malloc(sizeof(png_bytep) * h));
  if (rows == nullptr) png_error(png, "out of memory");
  for (png_uint_32 y = 0; y < h; ++y) rows[y] = out + stride * y;
  png_read_image(png, rows);
  if (read_channels == 3 && channels == 1) {
    // PIL's convert("L"): (R * 19595 + G * 38470 + B * 7471 + 0x8000) >> 16.
    const std::size_t n = static_cast<std::size_t>(w) * h;
    for (std::size_t i = 0; i < n; ++i)
      out[i] = static_cast<unsigned char>(
          (out[3 * i] * 19595u + out[3 * i + 1] * 38470u + out[3 * i + 2] * 7471u + 0x8000u) >> 16);
  }
  std::free(rows);
  png_destroy_read_struct(&png, &info, nullptr);
  r->height = h;
  r->width = w;
  return true;
}

unsigned char* allocate_pixels(void* owner, std::size_t bytes) {
  auto* v = static_cast<std::vector<std::uint8_t>*>(owner);
  try {
    v->resize(bytes);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  return v->data();
}

#endif  // QGRAD_WITH_IMAGES

}  // namespace

bool image_decoding_available() {
#ifdef QGRAD_WITH_IMAGES
  return true;
#else
  return false;
#endif
}

DecodedImage decode_image(const std::string& bytes, int channels, const std::string& source) {
  QGRAD_CHECK(channels == 1 || channels == 3, ValueError,
              "decode_image: channels must be 1 or 3, got ", channels);
  const bool jpeg = is_jpeg(bytes), png = is_png(bytes);
  QGRAD_CHECK(jpeg || png, IOError, "image '", source, "' is neither a JPEG nor a PNG file (",
              bytes.empty() ? "it is empty" : "its first bytes are not a JPEG or PNG signature",
              ")");
#ifdef QGRAD_WITH_IMAGES
  DecodedImage img;
  DecodeResult r;
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const bool ok =
      jpeg ? decode_jpeg_c(data, bytes.size(), channels, allocate_pixels, &img.pixels, &r)
           : decode_png_c(data, bytes.size(), channels, allocate_pixels, &img.pixels, &r);
  QGRAD_CHECK(ok, IOError, "image '", source, "': cannot decode this ", jpeg ? "JPEG" : "PNG",
              " file: ", r.error);
  img.height = r.height;
  img.width = r.width;
  img.channels = channels;
  // A colour PNG read as grey was decoded as RGB, then reduced in place: keep the grey part.
  img.pixels.resize(static_cast<std::size_t>(r.height * r.width * channels));
  return img;
#else
  throw IOError("image '" + source + "': this qgrad was built without JPEG / PNG decoding " +
                "(install the Debian packages libjpeg62-turbo-dev and libpng-dev, e.g. with " +
                "scripts/install_deps.sh, and configure again)");
#endif
}

}  // namespace qgrad::data
