// libFuzzer target: a quantizer state file (`qgrad export --quantizers`, read back by `qgrad eval
// --quantizers`) through parse_json and apply_quantizer_state onto a lenet5bn quantized with
// torch.ao's default recipe, as eval applies it. A file that is applied must write back
// (quantizer_state_json) to a file that applies to a fresh model and writes back the same. Any
// outcome but an applied state or a qgrad::Error is a finding.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/error.h"
#include "core/json_parse.h"
#include "nn/models/zoo.h"
#include "quant/modules/quant_recipe.h"
#include "quant/modules/quantize_model.h"
#include "quant/modules/quantizer_state_file.h"

namespace {

std::shared_ptr<qgrad::nn::UnaryModule> quantized_model() {
  static const qgrad::quant::QuantRecipe recipe =
      qgrad::quant::QuantRecipe::parse(R"({"family": "torch_ao"})");
  auto model = qgrad::nn::make_model("lenet5bn", 0);
  qgrad::quant::quantize_model(*model, recipe);
  return model;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace qgrad::quant;
  try {
    const nlohmann::json file =
        qgrad::parse_json(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json");
    auto model = quantized_model();
    apply_quantizer_state(*model, file, "fuzz.json");
    const nlohmann::json once = quantizer_state_json(*model);
    auto fresh = quantized_model();
    apply_quantizer_state(*fresh, once, "rewritten");
    if (quantizer_state_json(*fresh).dump() != once.dump()) __builtin_trap();
  } catch (const qgrad::Error&) {
  }
  return 0;
}
