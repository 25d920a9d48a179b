// libFuzzer target: QuantRecipe::parse (parse_json, then every family's fields validated and one
// quantizer of each role built as a probe) on arbitrary text. A recipe that parses must read back
// from its normalised to_json() text to the same normalised recipe. Any outcome but a recipe or a
// qgrad::Error is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "quant/modules/quant_recipe.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const nlohmann::json normalised = qgrad::quant::QuantRecipe::parse(text).to_json();
    if (qgrad::quant::QuantRecipe::parse(normalised.dump()).to_json() != normalised)
      __builtin_trap();  // the normalised recipe did not read back to itself
  } catch (const qgrad::Error&) {
  }
  return 0;
}
