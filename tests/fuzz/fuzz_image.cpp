// libFuzzer target: decode_image on arbitrary bytes, as RGB and as grey (the JPEG and PNG
// decoders behind it: libjpeg-turbo and libpng with qgrad's setjmp/longjmp error handling, the
// size bound, the colour conversions). Any outcome but a decoded image of the announced size or a
// qgrad::Error (another exception type, a crash, a leak, a sanitizer report) is a finding. In a
// build without the codecs every input is an IOError.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "nn/data/image_decode.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace qgrad::data;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  for (int channels : {3, 1}) {
    try {
      const DecodedImage img = decode_image(bytes, channels, "fuzz.img");
      if (img.height <= 0 || img.width <= 0 || img.channels != channels ||
          img.pixels.size() != static_cast<std::size_t>(img.height * img.width * channels))
        std::abort();
    } catch (const qgrad::Error&) {
    }
  }
  return 0;
}
