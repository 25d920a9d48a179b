// PactSettings: reading the keys and building DoReFa weight and PACT activation quantizers.
#include "quant/recipe/pact_settings.h"

#include "quant/learnable/pact_bits.h"
#include "quant/modules/dorefa_weight_quantizer.h"
#include "quant/modules/pact_activation_quantizer.h"
#include "quant/recipe/recipe_fields.h"

namespace qgrad::quant {

PactSettings PactSettings::parse(const nlohmann::json& j, QuantRole role, const std::string& path) {
  const bool weight = role == QuantRole::Weight;
  RecipeFields f(j, path,
                 weight ? std::vector<std::string>{"num_bits"}
                        : std::vector<std::string>{"num_bits", "alpha"});
  PactSettings s;
  s.num_bits = f.integer("num_bits", learnable::kPactMinBits, learnable::kPactMaxBits);
  s.alpha = f.number("alpha", 1e-30, 1e30);
  return s;
}

QuantizerFactories PactSettings::factories(QuantRole role, const std::string&) const {
  const int bits = static_cast<int>(num_bits.value_or(8));
  QuantizerFactories out;
  if (role == QuantRole::Weight) {
    out.weight = [bits](const Shape&) { return std::make_shared<DoReFaWeightQuantizer>(bits); };
    return out;
  }
  const double a = alpha ? alpha->value() : 10.0;
  out.input = [bits, a] { return std::make_shared<PactActivationQuantizer>(bits, a); };
  return out;
}

}  // namespace qgrad::quant
