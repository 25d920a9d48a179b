// libFuzzer target: parse_idx on arbitrary bytes (plain IDX: magic, type code, dims, payload
// size). Any outcome but a tensor or a qgrad::Error (another exception type, a crash, a
// sanitizer report, an allocation over the run's limit) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "nn/data/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    qgrad::data::parse_idx(std::string(reinterpret_cast<const char*>(data), size), "fuzz.idx");
  } catch (const qgrad::Error&) {
  }
  return 0;
}
