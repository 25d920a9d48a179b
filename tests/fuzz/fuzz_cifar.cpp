// libFuzzer target: parse_cifar on arbitrary bytes, as CIFAR-10 records and as CIFAR-100 records
// with fine and coarse labels (record size, label range). Any outcome but the parsed records or a
// qgrad::Error (another exception type, a crash, a sanitizer report) is a finding. The .npy
// dataset's file parser is parse_npy, fuzzed by fuzz_npy.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "core/error.h"
#include "nn/data/cifar.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace qgrad::data;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  for (const auto& [variant, label] : {std::pair{CIFARVariant::CIFAR10, CIFARLabel::Fine},
                                       std::pair{CIFARVariant::CIFAR100, CIFARLabel::Fine},
                                       std::pair{CIFARVariant::CIFAR100, CIFARLabel::Coarse}}) {
    try {
      parse_cifar(bytes, variant, label, "fuzz.bin");
    } catch (const qgrad::Error&) {
    }
  }
  return 0;
}
