// libFuzzer target: parse_npy on arbitrary bytes. Any outcome but a tensor or a qgrad::Error
// (another exception type, a crash, a sanitizer report, an allocation over the run's limit) is a
// finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    qgrad::parse_npy(std::string(reinterpret_cast<const char*>(data), size), "fuzz.npy");
  } catch (const qgrad::Error&) {
  }
  return 0;
}
