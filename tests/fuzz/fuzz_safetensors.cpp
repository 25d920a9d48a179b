// libFuzzer target: deserialize_safetensors on arbitrary bytes (header length, JSON header,
// offsets, qgrad's CRC32 metadata). Any outcome but parsed tensors or a qgrad::Error (another
// exception type, a crash, a sanitizer report, an allocation over the run's limit) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "nn/serialize/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    qgrad::serialize::deserialize_safetensors(
        std::string(reinterpret_cast<const char*>(data), size), "fuzz.safetensors");
  } catch (const qgrad::Error&) {
  }
  return 0;
}
