// TorchAoSettings: reading the keys and building torch.ao fake quantizers.
#include "quant/recipe/torch_ao_settings.h"

#include "quant/modules/fake_quantize.h"
#include "quant/modules/fused_fake_quantize.h"
#include "quant/recipe/recipe_fields.h"

namespace qgrad::quant {

namespace {

ao::QuantDType ao_dtype(const std::string& s) {
  if (s == "qint8") return ao::QuantDType::QInt8;
  if (s == "qint32") return ao::QuantDType::QInt32;
  return ao::QuantDType::QUInt8;
}

ao::QScheme ao_qscheme(const std::string& s) {
  if (s == "per_tensor_symmetric") return ao::QScheme::PerTensorSymmetric;
  if (s == "per_channel_affine") return ao::QScheme::PerChannelAffine;
  if (s == "per_channel_symmetric") return ao::QScheme::PerChannelSymmetric;
  return ao::QScheme::PerTensorAffine;
}

}  // namespace

TorchAoSettings TorchAoSettings::parse(const nlohmann::json& j, QuantRole,
                                       const std::string& path) {
  RecipeFields f(j, path, settings_keys<TorchAoSettings>());
  TorchAoSettings s;
  s.observer = f.choice(
      "observer", {"minmax", "moving_average_minmax", "histogram", "fused_moving_average_minmax"});
  s.dtype = f.choice("dtype", {"qint8", "quint8", "qint32"});
  s.qscheme = f.choice("qscheme", {"per_tensor_affine", "per_tensor_symmetric",
                                   "per_channel_affine", "per_channel_symmetric"});
  const std::int64_t lim = std::int64_t{1} << 32;
  s.quant_min = f.integer("quant_min", -lim, lim);
  s.quant_max = f.integer("quant_max", -lim, lim);
  s.reduce_range = f.boolean("reduce_range");
  s.eps = f.number("eps", 1e-30, 1.0);
  s.averaging_constant = f.number("averaging_constant", 0.0, 1.0);
  s.ch_axis = f.integer("ch_axis", -8, 7);
  s.bins = f.integer("bins", 1, std::int64_t{1} << 24);
  return s;
}

QuantizerFactories TorchAoSettings::factories(QuantRole role, const std::string& path) const {
  auto where = [&](const char* key) { return "\"" + path + "." + key + "\""; };
  const std::string obs = observer.value_or("moving_average_minmax");
  const std::string scheme = qscheme.value_or("per_tensor_affine");
  const bool per_channel = scheme.rfind("per_channel", 0) == 0;
  FakeQuantizeConfig c;
  ObserverConfig& oc = c.observer;
  oc.options.dtype(ao_dtype(dtype.value_or("quint8"))).qscheme(ao_qscheme(scheme));
  if (quant_min.has_value() != quant_max.has_value())
    recipe_error(where("quant_min") + " and " + where("quant_max") + " must be given together");
  if (quant_min) oc.options.quant_range(*quant_min, *quant_max);
  oc.options.reduce_range(reduce_range.value_or(false));
  oc.options.eps(eps ? eps->value() : ao::kFloat32Eps);
  oc.averaging_constant = averaging_constant ? averaging_constant->value() : 0.01;
  oc.ch_axis = ch_axis.value_or(0);
  oc.bins = bins.value_or(2048);
  if (obs == "histogram") {
    if (per_channel)
      recipe_error(where("observer") + " \"histogram\" is per tensor only, but " +
                   where("qscheme") + " is \"" + scheme + "\"");
    oc.kind = ObserverKind::Histogram;
  } else if (obs == "fused_moving_average_minmax") {
    // PyTorch 1.13's fused op quantizes per channel along axis 0 only.
    if (per_channel && oc.ch_axis != 0)
      recipe_error(where("observer") +
                   " \"fused_moving_average_minmax\" is per channel along axis 0 "
                   "only, but " +
                   where("ch_axis") + " is " + std::to_string(oc.ch_axis));
    oc.kind = per_channel ? ObserverKind::MovingAveragePerChannelMinMax
                          : ObserverKind::MovingAverageMinMax;
  } else if (obs == "minmax") {
    oc.kind = per_channel ? ObserverKind::PerChannelMinMax : ObserverKind::MinMax;
  } else {
    oc.kind = per_channel ? ObserverKind::MovingAveragePerChannelMinMax
                          : ObserverKind::MovingAverageMinMax;
  }
  const bool fused = obs == "fused_moving_average_minmax";
  QuantizerFactories out;
  if (role == QuantRole::Input) {
    if (per_channel && oc.ch_axis == 0)
      recipe_error(where("qscheme") + " \"" + scheme + "\" with " + where("ch_axis") +
                   " 0 quantizes an input along its batch axis, per image; inputs are quantized "
                   "per tensor or along a feature axis (\"ch_axis\": 1 for NCHW channels)");
    if (fused)
      out.input = [c] { return std::make_shared<FusedMovingAvgObsFakeQuantize>(c); };
    else
      out.input = [c] { return std::make_shared<FakeQuantize>(c); };
    return out;
  }
  out.weight = [c, per_channel, fused, path](const Shape& ws) -> std::shared_ptr<nn::UnaryModule> {
    FakeQuantizeConfig wc = c;
    if (per_channel)
      wc.channel_len = ws[static_cast<std::size_t>(
          weight_axis(c.observer.ch_axis, ws.size(), "\"" + path + ".ch_axis\""))];
    if (fused) return std::make_shared<FusedMovingAvgObsFakeQuantize>(wc);
    return std::make_shared<FakeQuantize>(wc);
  };
  return out;
}

}  // namespace qgrad::quant
