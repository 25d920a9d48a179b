// decode_image: real JPEG and PNG files written by libjpeg's and libpng's encoders
// (support/image_files.h). PNG decodes exactly, in every colour type and bit depth converted to
// grey or RGB; JPEG within a few levels of the source pixels; every corrupt, truncated or
// unsupported file is an IOError naming it.
#include <catch2/catch.hpp>

#include <zlib.h>

#include <algorithm>
#include <cstdlib>

#include "core/error.h"
#include "nn/data/image_decode.h"
#include "support/image_files.h"
#include "support/scratch_files.h"

using namespace qgrad;
using namespace qgrad::data;
using qgrad_test::TempDir;

namespace {

DecodedImage decode_file(const std::string& path, int channels) {
  return decode_image(qgrad_test::read_bytes(path), channels, path);
}

// The PNG file bytes with the IHDR's width and height replaced (and its CRC recomputed).
std::string with_size(std::string png, std::uint32_t width, std::uint32_t height) {
  auto put = [&](std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) png[at + i] = static_cast<char>(v >> (24 - 8 * i));
  };
  put(16, width);  // signature 8, length 4, "IHDR" 4
  put(20, height);
  const auto crc = crc32(0, reinterpret_cast<const Bytef*>(png.data() + 12), 17);
  put(29, static_cast<std::uint32_t>(crc));
  return png;
}

}  // namespace

TEST_CASE("image decode: PNG of every colour type and depth decodes exactly") {
  REQUIRE(image_decoding_available());
  TempDir tmp;
  const qgrad_test::TestImage rgb = qgrad_test::gradient_image(13, 17, 3, 1);
  qgrad_test::write_png(tmp.file("rgb.png"), rgb);
  DecodedImage d = decode_file(tmp.file("rgb.png"), 3);
  CHECK(d.height == 13);
  CHECK(d.width == 17);
  CHECK(d.channels == 3);
  CHECK(d.pixels == std::vector<std::uint8_t>(rgb.pixels.begin(), rgb.pixels.end()));

  // RGB to grey: PIL's convert("L") integer luma.
  d = decode_file(tmp.file("rgb.png"), 1);
  REQUIRE(d.pixels.size() == 13u * 17u);
  for (std::size_t i = 0; i < d.pixels.size(); ++i) {
    const unsigned r = rgb.pixels[3 * i], g = rgb.pixels[3 * i + 1], b = rgb.pixels[3 * i + 2];
    REQUIRE(d.pixels[i] == ((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16));
  }

  // Grey to RGB repeats the value.
  const qgrad_test::TestImage grey = qgrad_test::gradient_image(9, 11, 1, 2);
  qgrad_test::write_png(tmp.file("grey.png"), grey);
  d = decode_file(tmp.file("grey.png"), 3);
  for (std::size_t i = 0; i < grey.pixels.size(); ++i)
    for (int c = 0; c < 3; ++c) REQUIRE(d.pixels[3 * i + c] == grey.pixels[i]);
  CHECK(decode_file(tmp.file("grey.png"), 1).pixels ==
        std::vector<std::uint8_t>(grey.pixels.begin(), grey.pixels.end()));

  // 16-bit RGBA: the high byte of each sample, alpha dropped (PIL's convert("RGB")).
  std::vector<std::uint16_t> rgba16;
  for (int i = 0; i < 5 * 4; ++i)
    for (int c = 0; c < 4; ++c) rgba16.push_back(static_cast<std::uint16_t>(i * 3001 + c * 977));
  qgrad_test::write_png(tmp.file("rgba16.png"), 5, 4, PNG_COLOR_TYPE_RGB_ALPHA, 16, rgba16);
  d = decode_file(tmp.file("rgba16.png"), 3);
  for (int i = 0; i < 20; ++i)
    for (int c = 0; c < 3; ++c) REQUIRE(d.pixels[3 * i + c] == rgba16[4 * i + c] >> 8);

  // Grey + alpha, 8 bits: alpha dropped.
  std::vector<std::uint16_t> ga;
  for (int i = 0; i < 6; ++i) ga.insert(ga.end(), {static_cast<std::uint16_t>(i * 40), 7});
  qgrad_test::write_png(tmp.file("ga.png"), 2, 3, PNG_COLOR_TYPE_GRAY_ALPHA, 8, ga);
  d = decode_file(tmp.file("ga.png"), 1);
  CHECK(d.pixels == std::vector<std::uint8_t>{0, 40, 80, 120, 160, 200});

  // 1-, 2- and 4-bit grey are scaled to 8 bits (v x 255 / (2^bits - 1)).
  for (int bits : {1, 2, 4}) {
    std::vector<std::uint16_t> v;
    const int top = (1 << bits) - 1;
    for (int i = 0; i < 3 * 7; ++i) v.push_back(static_cast<std::uint16_t>(i % (top + 1)));
    const std::string path = tmp.file("g" + std::to_string(bits) + ".png");
    qgrad_test::write_png(path, 3, 7, PNG_COLOR_TYPE_GRAY, bits, v);
    d = decode_file(path, 1);
    INFO(bits << "-bit grey");
    for (std::size_t i = 0; i < v.size(); ++i) REQUIRE(d.pixels[i] == v[i] * 255 / top);
  }

  // A palette expands to its colours.
  const std::vector<png_color> palette{{10, 20, 30}, {200, 100, 0}, {1, 2, 3}};
  qgrad_test::write_png(tmp.file("pal.png"), 2, 2, PNG_COLOR_TYPE_PALETTE, 8, {2, 0, 1, 1},
                        palette);
  d = decode_file(tmp.file("pal.png"), 3);
  CHECK(d.pixels == std::vector<std::uint8_t>{1, 2, 3, 10, 20, 30, 200, 100, 0, 200, 100, 0});
}

TEST_CASE("image decode: JPEG decodes within a few levels of the source pixels") {
  TempDir tmp;
  for (int channels : {3, 1}) {
    const qgrad_test::TestImage src = qgrad_test::gradient_image(40, 56, channels, 3);
    qgrad_test::write_jpeg(tmp.file("a.jpg"), src, 95);
    const DecodedImage d = decode_file(tmp.file("a.jpg"), channels);
    REQUIRE(d.height == 40);
    REQUIRE(d.width == 56);
    REQUIRE(d.pixels.size() == src.pixels.size());
    double sum = 0;
    int worst = 0;
    for (std::size_t i = 0; i < src.pixels.size(); ++i) {
      const int diff = std::abs(static_cast<int>(d.pixels[i]) - src.pixels[i]);
      worst = std::max(worst, diff);
      sum += diff;
    }
    INFO(channels << " channels: mean |diff| " << sum / src.pixels.size() << ", max " << worst);
    // Quality 95 on smooth gradients with sharp-edged squares: small on average, bounded at the
    // edges (ringing).
    CHECK(sum / src.pixels.size() < 1.5);
    CHECK(worst <= 40);
  }
  // A colour JPEG read as grey gives its luma, a grey one read as RGB repeats it.
  qgrad_test::write_jpeg(tmp.file("c.jpg"), qgrad_test::gradient_image(8, 8, 3, 0));
  CHECK(decode_file(tmp.file("c.jpg"), 1).pixels.size() == 64u);
  qgrad_test::write_jpeg(tmp.file("g.jpg"), qgrad_test::gradient_image(8, 8, 1, 0));
  const DecodedImage g = decode_file(tmp.file("g.jpg"), 3);
  for (int i = 0; i < 64; ++i)
    CHECK((g.pixels[3 * i] == g.pixels[3 * i + 1] && g.pixels[3 * i] == g.pixels[3 * i + 2]));
}

TEST_CASE("image decode: corrupt, truncated and unsupported files are IOErrors naming the file") {
  TempDir tmp;
  qgrad_test::write_jpeg(tmp.file("ok.jpg"), qgrad_test::gradient_image(32, 32, 3, 0));
  qgrad_test::write_png(tmp.file("ok.png"), qgrad_test::gradient_image(32, 32, 3, 0));
  const std::string jpg = qgrad_test::read_bytes(tmp.file("ok.jpg"));
  const std::string png = qgrad_test::read_bytes(tmp.file("ok.png"));
  const auto error = [](const std::string& bytes, const std::string& name, int channels = 3) {
    return qgrad_test::io_error_of([&] { decode_image(bytes, channels, name); });
  };
  CHECK_THAT(error("", "empty.jpg"), Catch::Contains("empty.jpg") && Catch::Contains("empty"));
  CHECK_THAT(error("GIF89a....", "x.gif"),
             Catch::Contains("x.gif") && Catch::Contains("neither a JPEG nor a PNG"));
  // Truncated at several points (header, mid-scan): never a partly grey image.
  for (std::size_t n : {std::size_t{3}, std::size_t{20}, jpg.size() / 2, jpg.size() - 10})
    CHECK_THAT(error(jpg.substr(0, n), "cut.jpg"),
               Catch::Contains("cut.jpg") && Catch::Contains("cannot decode this JPEG"));
  for (std::size_t n : {std::size_t{8}, std::size_t{30}, png.size() / 2})
    CHECK_THAT(error(png.substr(0, n), "cut.png"),
               Catch::Contains("cut.png") && Catch::Contains("cannot decode this PNG"));
  // Garbage after a valid signature.
  std::string junk = jpg.substr(0, 3) + std::string(500, '\x5A');
  CHECK_THAT(error(junk, "junk.jpg"), Catch::Contains("junk.jpg"));
  std::string bad_crc = png;
  bad_crc[40] = static_cast<char>(bad_crc[40] ^ 0x55);  // inside the image data (IDAT)
  CHECK_THAT(error(bad_crc, "crc.png"), Catch::Contains("crc.png"));
  // A header claiming more pixels than kMaxImagePixels is refused before allocating.
  CHECK_THAT(error(with_size(png, 60000, 60000), "huge.png"),
             Catch::Contains("huge.png") && Catch::Contains("60000 x 60000 pixels"));
  CHECK_THAT(error(with_size(png, 0, 10), "zero.png"), Catch::Contains("zero.png"));
  // CMYK JPEGs: no conversion to RGB.
  {
    FILE* f = std::fopen(tmp.file("cmyk.jpg").c_str(), "wb");
    REQUIRE(f != nullptr);
    jpeg_compress_struct cinfo;
    jpeg_error_mgr err;
    cinfo.err = jpeg_std_error(&err);
    jpeg_create_compress(&cinfo);
    jpeg_stdio_dest(&cinfo, f);
    cinfo.image_width = 8;
    cinfo.image_height = 8;
    cinfo.input_components = 4;
    cinfo.in_color_space = JCS_CMYK;
    jpeg_set_defaults(&cinfo);
    jpeg_start_compress(&cinfo, TRUE);
    std::vector<unsigned char> row(32, 100);
    while (cinfo.next_scanline < 8) {
      JSAMPROW r = row.data();
      jpeg_write_scanlines(&cinfo, &r, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    std::fclose(f);
  }
  CHECK_THAT(error(qgrad_test::read_bytes(tmp.file("cmyk.jpg")), "cmyk.jpg"),
             Catch::Contains("cmyk.jpg") && Catch::Contains("CMYK"));
  CHECK_THROWS_AS(decode_image(png, 2, "two.png"), ValueError);
}
