// AimetSettings: reading the keys and building AimetQuantizeDequantize quantizers.
#include "quant/recipe/aimet_settings.h"

#include "quant/modules/aimet_quantizer.h"
#include "quant/recipe/recipe_fields.h"

namespace qgrad::quant {

AimetSettings AimetSettings::parse(const nlohmann::json& j, QuantRole, const std::string& path) {
  RecipeFields f(j, path, settings_keys<AimetSettings>());
  AimetSettings s;
  s.bitwidth = f.integer("bitwidth", 1, 32);
  s.symmetric = f.boolean("symmetric");
  s.per_channel = f.boolean("per_channel");
  return s;
}

QuantizerFactories AimetSettings::factories(QuantRole role, const std::string& path) const {
  const bool weight = role == QuantRole::Weight;
  const int bits = static_cast<int>(bitwidth.value_or(8));
  const bool sym = symmetric.value_or(weight);
  const bool pc = per_channel.value_or(weight);
  if (pc && !weight) recipe_error("\"" + path + ".per_channel\" is supported for weights only");
  QuantizerFactories out;
  if (!weight) {
    out.input = [bits, sym] {
      return std::make_shared<AimetQuantizeDequantize>(Shape{}, bits, sym);
    };
    return out;
  }
  out.weight = [bits, sym, pc](const Shape& ws) {
    Shape enc;
    if (pc) {
      enc.assign(ws.size(), 1);
      enc.at(0) = ws.at(0);
    }
    return std::make_shared<AimetQuantizeDequantize>(enc, bits, sym);
  };
  return out;
}

}  // namespace qgrad::quant
