/// @file
/// JPEG and PNG decoding for the image_folder data format, through libjpeg-turbo and libpng (built
/// with QGRAD_WITH_IMAGES; without them every decode throws an IOError naming the missing Debian
/// packages). The format is recognised from the file's first bytes, not its name. The result is
/// 8-bit grey (1 channel) or RGB (3 channels), as asked, whatever the file holds: grey is expanded
/// to RGB, colour reduced to grey (JPEG: its luma; PNG: ITU-R 601-2 luma, as PIL's convert("L")),
/// palettes expanded, 16-bit samples reduced to their high byte and alpha dropped (as PIL's
/// convert("RGB"), which torchvision's ImageFolder applies). A corrupt or truncated file is an
/// IOError naming `source`, never a crash or an exit(): libjpeg's and libpng's fatal errors jump
/// back (setjmp/longjmp) to the decoder, which throws.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qgrad::data {

/// A decoded image: rows of interleaved 8-bit channels (height x width x channels).
struct DecodedImage {
  std::int64_t height = 0;           ///< rows
  std::int64_t width = 0;            ///< columns
  std::int64_t channels = 0;         ///< 1 (grey) or 3 (RGB)
  std::vector<std::uint8_t> pixels;  ///< height * width * channels bytes, HWC
};

/// The most pixels an image may have (8192 x 8192): a larger size in a header is refused before
/// anything is allocated (a corrupt header could claim 65535 x 65535).
constexpr std::int64_t kMaxImagePixels = std::int64_t{1} << 26;

/// True when this build decodes images (QGRAD_WITH_IMAGES).
bool image_decoding_available();

/// Decodes the JPEG or PNG file `bytes` into `channels` (1 or 3) channels; `source` names the file
/// in errors. Throws IOError naming `source` when the bytes are neither format, corrupt,
/// truncated, CMYK, larger than kMaxImagePixels, or the build has no decoders; ValueError for
/// `channels` other than 1 or 3.
DecodedImage decode_image(const std::string& bytes, int channels, const std::string& source);

}  // namespace qgrad::data
