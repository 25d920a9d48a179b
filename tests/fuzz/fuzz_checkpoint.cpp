// libFuzzer target: parse_checkpoint on arbitrary bytes (a safetensors file plus qgrad's
// checkpoint metadata and section prefixes). Any outcome but a checkpoint or a qgrad::Error
// (another exception type, a crash, a sanitizer report, an allocation over the run's limit) is
// a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "nn/serialize/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    qgrad::serialize::parse_checkpoint(std::string(reinterpret_cast<const char*>(data), size),
                                       "fuzz.safetensors");
  } catch (const qgrad::Error&) {
  }
  return 0;
}
