// HorizonSettings: reading the keys and building HorizonFakeQuantize quantizers.
#include "quant/recipe/horizon_settings.h"

#include "quant/modules/horizon_fake_quantize.h"
#include "quant/recipe/recipe_fields.h"

namespace qgrad::quant {

HorizonSettings HorizonSettings::parse(const nlohmann::json& j, QuantRole,
                                       const std::string& path) {
  RecipeFields f(j, path, settings_keys<HorizonSettings>());
  HorizonSettings s;
  s.dtype = f.choice("dtype", {"qint8", "qint16", "qint4", "quint4"});
  s.saturate = f.boolean("saturate");
  s.round_mode = f.choice("round_mode", {"half_to_even", "half_up"});
  s.averaging_constant = f.number("averaging_constant", 0.0, 1.0);
  s.per_channel = f.boolean("per_channel");
  return s;
}

QuantizerFactories HorizonSettings::factories(QuantRole role, const std::string& path) const {
  const bool weight = role == QuantRole::Weight;
  const std::string d = dtype.value_or("qint8");
  horizon::FakeQuantizeOptions o;
  o.dtype(d == "qint16"   ? horizon::QDType::QInt16
          : d == "qint4"  ? horizon::QDType::QInt4
          : d == "quint4" ? horizon::QDType::QUInt4
                          : horizon::QDType::QInt8);
  o.saturate(saturate.value_or(true));
  o.round_mode(round_mode.value_or("half_to_even") == "half_up" ? horizon::RoundMode::HalfUp
                                                                : horizon::RoundMode::HalfToEven);
  o.averaging_constant(averaging_constant ? averaging_constant->value() : 0.01);
  const bool pc = per_channel.value_or(weight);
  if (pc && !weight) recipe_error("\"" + path + ".per_channel\" is supported for weights only");
  QuantizerFactories out;
  if (!weight) {
    out.input = [o] { return std::make_shared<HorizonFakeQuantize>(o); };
    return out;
  }
  out.weight = [o, pc](const Shape& ws) {
    horizon::FakeQuantizeOptions wo = o;
    if (pc) wo.per_channel(0, ws.at(0));
    return std::make_shared<HorizonFakeQuantize>(wo);
  };
  return out;
}

}  // namespace qgrad::quant
