// libFuzzer target: QuantDescriptor::parse (parse_json, then from_json with every field checked)
// on arbitrary text. A descriptor that parses must round-trip exactly: to_json(), as text, parses
// back to an equal descriptor. Any outcome but a descriptor or a qgrad::Error is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "quant/nvidia/quant_descriptor.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const qgrad::nvidia::QuantDescriptor d = qgrad::nvidia::QuantDescriptor::parse(text);
    const qgrad::nvidia::QuantDescriptor again =
        qgrad::nvidia::QuantDescriptor::parse(d.to_json().dump());
    if (again != d) __builtin_trap();  // the round trip changed the descriptor
  } catch (const qgrad::Error&) {
  }
  return 0;
}
