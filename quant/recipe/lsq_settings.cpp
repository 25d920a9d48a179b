// LsqSettings: reading the keys and building LearnableFakeQuantize quantizers.
#include "quant/recipe/lsq_settings.h"

#include "quant/modules/learnable_fake_quantize.h"
#include "quant/recipe/recipe_fields.h"

namespace qgrad::quant {

LsqSettings LsqSettings::parse(const nlohmann::json& j, QuantRole, const std::string& path) {
  RecipeFields f(j, path, settings_keys<LsqSettings>());
  LsqSettings s;
  // 2 bits at least: a signed 1-bit grid [-1, 0] has Q_P = 0, and LSQ's step size and gradient
  // scale divide by Q_P.
  s.num_bits = f.integer("num_bits", 2, 16);
  s.is_signed = f.boolean("signed");
  s.per_channel = f.boolean("per_channel");
  s.learn_zero_point = f.boolean("learn_zero_point");
  s.init = f.choice("init", {"lsq", "minmax", "observer"});
  s.use_grad_scaling = f.boolean("use_grad_scaling");
  s.averaging_constant = f.number("averaging_constant", 0.0, 1.0);
  return s;
}

QuantizerFactories LsqSettings::factories(QuantRole role, const std::string& path) const {
  const bool weight = role == QuantRole::Weight;
  const std::int64_t bits = num_bits.value_or(8);
  const bool sgn = is_signed.value_or(weight);
  const bool pc = per_channel.value_or(false);
  const bool learn_zp = learn_zero_point.value_or(!weight);
  if (pc && !weight) recipe_error("\"" + path + ".per_channel\" is supported for weights only");
  const std::string how = init.value_or(learn_zp ? "minmax" : "lsq");
  LearnableFakeQuantizeConfig c;
  c.use_grad_scaling = use_grad_scaling.value_or(true);
  c.init = how == "lsq"      ? LearnableInit::LSQ
           : how == "minmax" ? LearnableInit::MinMax
                             : LearnableInit::Observer;
  ObserverConfig& oc = c.observer;
  oc.averaging_constant = averaging_constant ? averaging_constant->value() : 0.01;
  oc.kind = pc ? ObserverKind::MovingAveragePerChannelMinMax : ObserverKind::MovingAverageMinMax;
  oc.ch_axis = 0;
  const std::int64_t qmin = sgn ? -(std::int64_t{1} << (bits - 1)) : 0;
  const std::int64_t qmax =
      sgn ? (std::int64_t{1} << (bits - 1)) - 1 : (std::int64_t{1} << bits) - 1;
  const ao::QuantDType dtype = bits > 8 ? ao::QuantDType::QInt32
                               : sgn    ? ao::QuantDType::QInt8
                                        : ao::QuantDType::QUInt8;
  const ao::QScheme qs =
      pc ? (learn_zp ? ao::QScheme::PerChannelAffine : ao::QScheme::PerChannelSymmetric)
         : (learn_zp ? ao::QScheme::PerTensorAffine : ao::QScheme::PerTensorSymmetric);
  oc.options.dtype(dtype).qscheme(qs).quant_range(qmin, qmax);
  QuantizerFactories out;
  if (!weight) {
    out.input = [c] { return std::make_shared<LearnableFakeQuantize>(c); };
    return out;
  }
  out.weight = [c, pc](const Shape& ws) {
    LearnableFakeQuantizeConfig wc = c;
    if (pc) wc.channel_len = ws.at(0);
    return std::make_shared<LearnableFakeQuantize>(wc);
  };
  return out;
}

}  // namespace qgrad::quant
