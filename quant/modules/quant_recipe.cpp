// QuantRecipe: JSON parsing and validation, and the quantizer factories of each family.
#include "quant/modules/quant_recipe.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "core/json_parse.h"

#include "quant/modules/aimet_quantizer.h"
#include "quant/modules/dorefa_weight_quantizer.h"
#include "quant/modules/fake_quantize.h"
#include "quant/modules/fused_fake_quantize.h"
#include "quant/modules/horizon_fake_quantize.h"
#include "quant/modules/layer_rules.h"
#include "quant/modules/learnable_fake_quantize.h"
#include "quant/modules/named_recipes.h"
#include "quant/modules/pact_activation_quantizer.h"
#include "quant/modules/tensor_quantizer.h"
#include "quant/nvidia/block_quant.h"

namespace qgrad::quant {

using json = nlohmann::json;

namespace {

[[noreturn]] void fail(const std::string& msg) {
  throw ValueError("quant recipe: " + msg);
}

// A value in an error message: scalars as JSON text (cut short), arrays and objects by type and
// size, never dump()ed whole.
std::string shown(const json& v) {
  if (v.is_structured()) return describe_json(v);
  std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 64) text = text.substr(0, 64) + "...";
  return text;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + ("\"" + v[i] + "\"");
  return s;
}

// The fields of one JSON object, each read with its dotted path for error messages; unknown
// keys are rejected on construction.
class Fields {
 public:
  Fields(const json& obj, std::string path, const std::vector<std::string>& allowed)
      : obj_(obj), path_(std::move(path)) {
    if (!obj.is_object()) fail(quoted_path() + " must be a JSON object, got " + shown(obj));
    const std::set<std::string> ok(allowed.begin(), allowed.end());
    for (auto it = obj.begin(); it != obj.end(); ++it)
      if (!ok.count(it.key()))
        fail("unknown key " + where(it.key()) + " (expected one of: " + joined(allowed) + ")");
  }

  bool has(const std::string& key) const { return obj_.contains(key); }
  const json& at(const std::string& key) const { return obj_.at(key); }
  std::string where(const std::string& key) const {
    return "\"" + (path_.empty() ? key : path_ + "." + key) + "\"";
  }

  std::int64_t get_int(const std::string& key, std::int64_t def, std::int64_t lo,
                       std::int64_t hi) const {
    if (!has(key)) return def;
    const json& v = at(key);
    const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    if (!v.is_number_integer())
      fail(where(key) + " must be an integer in " + range + ", got " + shown(v));
    // nlohmann keeps 2^63..2^64-1 unsigned; get<int64_t>() would wrap them to negatives.
    if (v.is_number_unsigned() &&
        v.get<std::uint64_t>() >
            static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      fail(where(key) + " must lie in " + range + ", got " + shown(v));
    const auto x = v.get<std::int64_t>();
    if (x < lo || x > hi) fail(where(key) + " must lie in " + range + ", got " + shown(v));
    return x;
  }
  double get_number(const std::string& key, double def, double lo, double hi) const {
    if (!has(key)) return def;
    const json& v = at(key);
    if (!v.is_number()) fail(where(key) + " must be a number, got " + shown(v));
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < lo || x > hi)
      fail(where(key) + " must lie in [" + std::to_string(lo) + ", " + std::to_string(hi) +
           "], got " + shown(v));
    return x;
  }
  bool get_bool(const std::string& key, bool def) const {
    if (!has(key)) return def;
    const json& v = at(key);
    if (!v.is_boolean()) fail(where(key) + " must be true or false, got " + shown(v));
    return v.get<bool>();
  }
  std::string get_choice(const std::string& key, const std::string& def,
                         const std::vector<std::string>& choices) const {
    if (!has(key)) return def;
    const json& v = at(key);
    if (!v.is_string() ||
        std::find(choices.begin(), choices.end(), v.get<std::string>()) == choices.end())
      fail(where(key) + " must be one of " + joined(choices) + ", got " + shown(v));
    return v.get<std::string>();
  }

 private:
  std::string quoted_path() const { return path_.empty() ? "the recipe" : "\"" + path_ + "\""; }
  const json& obj_;
  std::string path_;
};

// Axis a of a tensor of rank `rank`, normalised (ValueError naming the recipe key).
std::int64_t weight_axis(std::int64_t a, std::size_t rank, const std::string& what) {
  const auto r = static_cast<std::int64_t>(rank);
  if (a < -r || a >= r)
    fail(what + " " + std::to_string(a) + " is out of range for a weight of rank " +
         std::to_string(r));
  return a < 0 ? a + r : a;
}

struct Factories {
  QuantRecipe::WeightQuantizerFactory weight;
  QuantRecipe::InputQuantizerFactory input;
};

// A bound far beyond any use that keeps the images counted during calibration within int64.
constexpr std::int64_t kMaxCalibrationBatches = 1000000;

// ---- nvidia ----------------------------------------------------------------------------------

Factories parse_nvidia(const json& j, const std::string& role, const std::string& path) {
  Fields f(
      j, path,
      {"num_bits", "name", "fake_quant", "axis", "block_sizes", "amax", "learn_amax", "scale_amax",
       "calib_method", "unsigned", "narrow_range", "dynamic", "fp8_recipe", "num_bins"});
  const std::int64_t num_bins = f.get_int("num_bins", 2048, 2, std::int64_t{1} << 24);
  json dj = j;
  dj.erase("num_bins");
  nvidia::QuantDescriptor d;
  try {
    d = nvidia::QuantDescriptor::from_json(dj);
  } catch (const Error& e) {
    fail("\"" + path + "\": " + e.what());
  }
  Factories out;
  if (role == "input") {
    // Inputs are [N, ...]: an amax per position along axis 0 would quantize each test image with
    // the range of the calibration image at the same batch position.
    for (std::int64_t a : d.axis().axes)
      if (a == 0)
        fail("\"" + path +
             ".axis\" is 0, the batch axis of an input: inputs are quantized per "
             "tensor or along a feature axis (1 for NCHW channels), never per image");
    out.input = [d, num_bins] {
      return std::make_shared<TensorQuantizer>(d, TensorQuantizerOptions().num_bins(num_bins));
    };
    return out;
  }
  out.weight = [d, num_bins, path](const Shape& ws) {
    TensorQuantizerOptions o;
    o.num_bins(num_bins);
    if (!d.axis().is_none()) {
      Shape s(ws.size(), 1);
      for (std::int64_t a : d.axis().axes) {
        const std::int64_t n = weight_axis(a, ws.size(), "\"" + path + ".axis\"");
        s[static_cast<std::size_t>(n)] = ws[static_cast<std::size_t>(n)];
      }
      o.amax_shape(s);
    } else if (d.block_sizes() && d.block_sizes()->type == nvidia::BlockQuantType::Static &&
               !d.dynamic()) {
      o.amax_shape(nvidia::block_grid_shape(ws, *d.block_sizes()));
    }
    return std::make_shared<TensorQuantizer>(d, o);
  };
  return out;
}

// ---- torch_ao --------------------------------------------------------------------------------

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

Factories parse_torch_ao(const json& j, const std::string& role, const std::string& path) {
  Fields f(j, path,
           {"observer", "dtype", "qscheme", "quant_min", "quant_max", "reduce_range",
            "averaging_constant", "ch_axis", "eps", "bins"});
  const std::string obs =
      f.get_choice("observer", "moving_average_minmax",
                   {"minmax", "moving_average_minmax", "histogram", "fused_moving_average_minmax"});
  const std::string dtype = f.get_choice("dtype", "quint8", {"qint8", "quint8", "qint32"});
  const std::string qscheme = f.get_choice(
      "qscheme", "per_tensor_affine",
      {"per_tensor_affine", "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric"});
  const bool per_channel = qscheme.rfind("per_channel", 0) == 0;
  FakeQuantizeConfig c;
  ObserverConfig& oc = c.observer;
  oc.options.dtype(ao_dtype(dtype)).qscheme(ao_qscheme(qscheme));
  if (f.has("quant_min") != f.has("quant_max"))
    fail(f.where("quant_min") + " and " + f.where("quant_max") + " must be given together");
  if (f.has("quant_min")) {
    const std::int64_t lim = std::int64_t{1} << 32;
    oc.options.quant_range(f.get_int("quant_min", 0, -lim, lim),
                           f.get_int("quant_max", 0, -lim, lim));
  }
  oc.options.reduce_range(f.get_bool("reduce_range", false));
  oc.options.eps(f.get_number("eps", ao::kFloat32Eps, 1e-30, 1.0));
  oc.averaging_constant = f.get_number("averaging_constant", 0.01, 0.0, 1.0);
  oc.ch_axis = f.get_int("ch_axis", 0, -8, 7);
  oc.bins = f.get_int("bins", 2048, 1, std::int64_t{1} << 24);
  if (obs == "histogram") {
    if (per_channel)
      fail(f.where("observer") + " \"histogram\" is per tensor only, but " + f.where("qscheme") +
           " is \"" + qscheme + "\"");
    oc.kind = ObserverKind::Histogram;
  } else if (obs == "fused_moving_average_minmax") {
    // PyTorch 1.13's fused op quantizes per channel along axis 0 only.
    if (per_channel && oc.ch_axis != 0)
      fail(f.where("observer") +
           " \"fused_moving_average_minmax\" is per channel along axis 0 "
           "only, but " +
           f.where("ch_axis") + " is " + std::to_string(oc.ch_axis));
    oc.kind = per_channel ? ObserverKind::MovingAveragePerChannelMinMax
                          : ObserverKind::MovingAverageMinMax;
  } else if (obs == "minmax") {
    oc.kind = per_channel ? ObserverKind::PerChannelMinMax : ObserverKind::MinMax;
  } else {
    oc.kind = per_channel ? ObserverKind::MovingAveragePerChannelMinMax
                          : ObserverKind::MovingAverageMinMax;
  }
  const bool fused = obs == "fused_moving_average_minmax";
  Factories out;
  if (role == "input") {
    if (per_channel && oc.ch_axis == 0)
      fail(f.where("qscheme") + " \"" + qscheme + "\" with " + f.where("ch_axis") +
           " 0 quantizes an input along its batch axis, per image; inputs are quantized per "
           "tensor or along a feature axis (\"ch_axis\": 1 for NCHW channels)");
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

// ---- lsq -------------------------------------------------------------------------------------

Factories parse_lsq(const json& j, const std::string& role, const std::string& path) {
  const bool weight = role == "weight";
  Fields f(j, path,
           {"num_bits", "signed", "per_channel", "learn_zero_point", "use_grad_scaling", "init",
            "averaging_constant"});
  const std::int64_t bits = f.get_int("num_bits", 8, 2, 16);
  const bool is_signed = f.get_bool("signed", weight);
  const bool per_channel = f.get_bool("per_channel", false);
  const bool learn_zp = f.get_bool("learn_zero_point", !weight);
  if (per_channel && !weight) fail(f.where("per_channel") + " is supported for weights only");
  const std::string init =
      f.get_choice("init", learn_zp ? "minmax" : "lsq", {"lsq", "minmax", "observer"});
  LearnableFakeQuantizeConfig c;
  c.use_grad_scaling = f.get_bool("use_grad_scaling", true);
  c.init = init == "lsq"      ? LearnableInit::LSQ
           : init == "minmax" ? LearnableInit::MinMax
                              : LearnableInit::Observer;
  ObserverConfig& oc = c.observer;
  oc.averaging_constant = f.get_number("averaging_constant", 0.01, 0.0, 1.0);
  oc.kind =
      per_channel ? ObserverKind::MovingAveragePerChannelMinMax : ObserverKind::MovingAverageMinMax;
  oc.ch_axis = 0;
  const std::int64_t qmin = is_signed ? -(std::int64_t{1} << (bits - 1)) : 0;
  const std::int64_t qmax =
      is_signed ? (std::int64_t{1} << (bits - 1)) - 1 : (std::int64_t{1} << bits) - 1;
  const ao::QuantDType dtype = bits > 8    ? ao::QuantDType::QInt32
                               : is_signed ? ao::QuantDType::QInt8
                                           : ao::QuantDType::QUInt8;
  const ao::QScheme qs =
      per_channel ? (learn_zp ? ao::QScheme::PerChannelAffine : ao::QScheme::PerChannelSymmetric)
                  : (learn_zp ? ao::QScheme::PerTensorAffine : ao::QScheme::PerTensorSymmetric);
  oc.options.dtype(dtype).qscheme(qs).quant_range(qmin, qmax);
  Factories out;
  if (!weight) {
    out.input = [c] { return std::make_shared<LearnableFakeQuantize>(c); };
    return out;
  }
  out.weight = [c, per_channel](const Shape& ws) {
    LearnableFakeQuantizeConfig wc = c;
    if (per_channel) wc.channel_len = ws.at(0);
    return std::make_shared<LearnableFakeQuantize>(wc);
  };
  return out;
}

// ---- horizon ---------------------------------------------------------------------------------

Factories parse_horizon(const json& j, const std::string& role, const std::string& path) {
  const bool weight = role == "weight";
  Fields f(j, path, {"dtype", "saturate", "round_mode", "per_channel", "averaging_constant"});
  const std::string dtype = f.get_choice("dtype", "qint8", {"qint8", "qint16", "qint4", "quint4"});
  horizon::FakeQuantizeOptions o;
  o.dtype(dtype == "qint16"   ? horizon::QDType::QInt16
          : dtype == "qint4"  ? horizon::QDType::QInt4
          : dtype == "quint4" ? horizon::QDType::QUInt4
                              : horizon::QDType::QInt8);
  o.saturate(f.get_bool("saturate", true));
  o.round_mode(f.get_choice("round_mode", "half_to_even", {"half_to_even", "half_up"}) == "half_up"
                   ? horizon::RoundMode::HalfUp
                   : horizon::RoundMode::HalfToEven);
  o.averaging_constant(f.get_number("averaging_constant", 0.01, 0.0, 1.0));
  const bool per_channel = f.get_bool("per_channel", weight);
  if (per_channel && !weight) fail(f.where("per_channel") + " is supported for weights only");
  Factories out;
  if (!weight) {
    out.input = [o] { return std::make_shared<HorizonFakeQuantize>(o); };
    return out;
  }
  out.weight = [o, per_channel](const Shape& ws) {
    horizon::FakeQuantizeOptions wo = o;
    if (per_channel) wo.per_channel(0, ws.at(0));
    return std::make_shared<HorizonFakeQuantize>(wo);
  };
  return out;
}

// ---- aimet -----------------------------------------------------------------------------------

Factories parse_aimet(const json& j, const std::string& role, const std::string& path) {
  const bool weight = role == "weight";
  Fields f(j, path, {"bitwidth", "symmetric", "per_channel"});
  const int bits = static_cast<int>(f.get_int("bitwidth", 8, 1, 32));
  const bool symmetric = f.get_bool("symmetric", weight);
  const bool per_channel = f.get_bool("per_channel", weight);
  if (per_channel && !weight) fail(f.where("per_channel") + " is supported for weights only");
  Factories out;
  if (!weight) {
    out.input = [bits, symmetric] {
      return std::make_shared<AimetQuantizeDequantize>(Shape{}, bits, symmetric);
    };
    return out;
  }
  out.weight = [bits, symmetric, per_channel](const Shape& ws) {
    Shape enc;
    if (per_channel) {
      enc.assign(ws.size(), 1);
      enc.at(0) = ws.at(0);
    }
    return std::make_shared<AimetQuantizeDequantize>(enc, bits, symmetric);
  };
  return out;
}

// ---- pact ------------------------------------------------------------------------------------

Factories parse_pact(const json& j, const std::string& role, const std::string& path) {
  const bool weight = role == "weight";
  Fields f(j, path,
           weight ? std::vector<std::string>{"num_bits"}
                  : std::vector<std::string>{"num_bits", "alpha"});
  const int bits = static_cast<int>(f.get_int("num_bits", 8, 1, 16));
  Factories out;
  if (weight) {
    out.weight = [bits](const Shape&) { return std::make_shared<DoReFaWeightQuantizer>(bits); };
    return out;
  }
  const double alpha = f.get_number("alpha", 10.0, 1e-30, 1e30);
  out.input = [bits, alpha] { return std::make_shared<PactActivationQuantizer>(bits, alpha); };
  return out;
}

// ---- families --------------------------------------------------------------------------------

struct FamilyInfo {
  QuantFamily family;
  const char* name;
  Factories (*parse)(const json&, const std::string& role, const std::string& path);
  const char* weight_default;
  const char* input_default;
  std::int64_t calibration_batches;
};

const std::vector<FamilyInfo>& families() {
  static const std::vector<FamilyInfo> f{
      {QuantFamily::NVIDIA, "nvidia", parse_nvidia, R"({"num_bits": 8, "axis": 0})",
       R"({"num_bits": 8})", 8},
      // PyTorch 1.13's get_default_qat_qconfig("fbgemm"): default_fused_per_channel_wt_fake_quant
      // and FusedMovingAvgObsFakeQuantize(quint8 [0, 255], reduce_range = True).
      {QuantFamily::TorchAO, "torch_ao", parse_torch_ao,
       R"({"observer": "fused_moving_average_minmax", "dtype": "qint8",
           "qscheme": "per_channel_symmetric", "quant_min": -128, "quant_max": 127})",
       R"({"observer": "fused_moving_average_minmax", "dtype": "quint8",
           "qscheme": "per_tensor_affine", "quant_min": 0, "quant_max": 255,
           "reduce_range": true})",
       0},
      {QuantFamily::LSQ, "lsq", parse_lsq, R"({"signed": true, "init": "lsq"})",
       R"({"signed": false, "learn_zero_point": true, "init": "minmax"})", 0},
      {QuantFamily::Horizon, "horizon", parse_horizon, R"({"per_channel": true})", "{}", 8},
      {QuantFamily::AIMET, "aimet", parse_aimet, R"({"symmetric": true, "per_channel": true})",
       R"({"symmetric": false})", 8},
      {QuantFamily::PACT, "pact", parse_pact, R"({"num_bits": 8})", R"({"num_bits": 8})", 0},
  };
  return f;
}

const FamilyInfo& family_info(QuantFamily fam) {
  for (const FamilyInfo& f : families())
    if (f.family == fam) return f;
  throw ValueError("quant recipe: unknown family");
}

}  // namespace

const char* quant_family_name(QuantFamily f) {
  return family_info(f).name;
}

QuantRecipe QuantRecipe::from_json(const json& given) {
  // {"recipe": "lsq_w4a4", ...}: the named recipe with the other keys merged over it.
  const json j = expand_named_recipe(given);
  // "recipe" is listed for the unknown-key message; expand_named_recipe has removed it.
  Fields top(j, "",
             {"recipe", "family", "weight", "input", "layers", "add", "fuse_bn", "bias", "exclude",
              "calibration"});
  std::vector<std::string> names;
  for (const FamilyInfo& f : families()) names.push_back(f.name);
  if (!top.has("family"))
    fail("\"family\" is required (one of " + joined(names) +
         "), or \"recipe\" naming a recipe (qgrad recipes lists them)");
  const std::string fam = top.get_choice("family", "", names);
  const FamilyInfo* info = nullptr;
  for (const FamilyInfo& f : families())
    if (fam == f.name) info = &f;

  QuantRecipe r;
  r.family_ = info->family;
  auto role_json = [&](const std::string& role, const char* def) {
    if (!top.has(role)) return json::parse(def);
    const json& v = top.at(role);
    if (!v.is_null() && !v.is_object())
      fail(top.where(role) + " must be an object or null, got " + shown(v));
    return v;
  };
  r.weight_json_ = role_json("weight", info->weight_default);
  r.input_json_ = role_json("input", info->input_default);
  if (!r.weight_json_.is_null())
    r.weight_factory_ = info->parse(r.weight_json_, "weight", "weight").weight;
  if (!r.input_json_.is_null())
    r.input_factory_ = info->parse(r.input_json_, "input", "input").input;
  r.add_ = top.get_bool("add", true);
  r.fuse_bn_ = top.get_bool("fuse_bn", false);
  r.int32_bias_ = top.get_choice("bias", "float", {"float", "int32"}) == "int32";
  if (r.int32_bias_ && r.fuse_bn_)
    fail(
        "\"bias\": \"int32\" needs \"fuse_bn\": false (a fused conv + batch norm's folded bias "
        "changes with the batch statistics every step; keep the batch norm float after the conv)");
  if (top.has("layers")) r.layer_rules_ = LayerRules::from_json(top.at("layers"));

  if (top.has("exclude")) {
    const json& e = top.at("exclude");
    if (!e.is_array()) fail("\"exclude\" must be a list of module names, got " + shown(e));
    for (const json& n : e) {
      if (!n.is_string()) fail("\"exclude\" entries must be strings, got " + shown(n));
      r.exclude_.push_back(n.get<std::string>());
    }
  }

  const json cal = top.has("calibration") ? top.at("calibration") : json::object();
  Fields c(cal, "calibration",
           {"batches", "method", "percentile", "start_bin", "stride", "strict"});
  r.calibration_batches_ =
      c.get_int("batches", info->calibration_batches, 0, kMaxCalibrationBatches);
  r.calibration_.method = c.get_choice("method", "entropy", {"entropy", "mse", "percentile"});
  r.calibration_.histogram.percentile = c.get_number("percentile", 99.99, 0.0, 100.0);
  if (r.calibration_.histogram.percentile <= 0) fail(c.where("percentile") + " must be > 0");
  r.calibration_.histogram.start_bin = c.get_int("start_bin", 128, 0, std::int64_t{1} << 30);
  r.calibration_.histogram.stride = c.get_int("stride", 1, 1, std::int64_t{1} << 30);
  r.calibration_.strict = c.get_bool("strict", true);
  const bool rules_quantize = std::any_of(
      r.layer_rules_.rules().begin(), r.layer_rules_.rules().end(), [](const LayerRules::Rule& x) {
        for (const char* role : {"weight", "input"})
          if (x.settings.contains(role) && !x.settings.at(role).is_null()) return true;
        return false;
      });
  if (r.family_ == QuantFamily::AIMET && r.calibration_batches_ == 0 &&
      (r.quantizes_weights() || r.quantizes_inputs() || rules_quantize))
    fail(c.where("batches") +
         " must be >= 1 for the aimet family (its quantizers need compute_encodings before use)");

  // Build one quantizer of each kind now, so that values the quantizers reject are reported at
  // parse time (a convolution and a linear weight shape).
  auto probe = [](const std::string& path, const Factories& f) {
    try {
      if (f.weight) {
        f.weight({4, 4, 3, 3});
        f.weight({4, 4});
      }
      if (f.input) f.input();
    } catch (const Error& e) {
      const std::string what = e.what();
      if (what.rfind("quant recipe:", 0) == 0) throw;
      fail("\"" + path + "\": " + what);
    }
  };
  probe("weight", Factories{r.weight_factory_, {}});
  probe("input", Factories{{}, r.input_factory_});
  // Each rule on its own over the top-level settings, for the same reason; the combinations that
  // several matching rules make are checked per layer by layer().
  for (const LayerRules::Rule& rule : r.layer_rules_.rules())
    for (const char* role : {"weight", "input"}) {
      if (!rule.settings.contains(role) || rule.settings.at(role).is_null()) continue;
      json settings = std::string(role) == "weight" ? r.weight_json_ : r.input_json_;
      if (settings.is_null())
        settings =
            json::parse(std::string(role) == "weight" ? info->weight_default : info->input_default);
      merge_recipe_json(settings, rule.settings.at(role));
      const std::string path = rule.label + "." + role;
      probe(path, info->parse(settings, role, path));
    }
  return r;
}

QuantRecipe QuantRecipe::parse(const std::string& text) {
  json j;
  try {
    // Depth-bounded, duplicate keys and numbers beyond double's range rejected.
    j = parse_json(text, "recipe text");
  } catch (const IOError& e) {
    fail(std::string("invalid JSON in ") + e.what());
  }
  return from_json(j);
}

json QuantRecipe::to_json() const {
  json j;
  j["family"] = quant_family_name(family_);
  j["weight"] = weight_json_;
  j["input"] = input_json_;
  j["add"] = add_;
  j["fuse_bn"] = fuse_bn_;
  j["bias"] = int32_bias_ ? "int32" : "float";
  if (!layer_rules_.empty()) j["layers"] = layer_rules_.to_json();
  j["exclude"] = exclude_;
  j["calibration"] = {{"batches", calibration_batches_},
                      {"method", calibration_.method},
                      {"percentile", calibration_.histogram.percentile},
                      {"start_bin", calibration_.histogram.start_bin},
                      {"stride", calibration_.histogram.stride},
                      {"strict", calibration_.strict}};
  return j;
}

std::shared_ptr<nn::UnaryModule> QuantRecipe::make_weight_quantizer(
    const Shape& weight_shape) const {
  return weight_factory_ ? weight_factory_(weight_shape) : nullptr;
}

std::shared_ptr<nn::UnaryModule> QuantRecipe::make_input_quantizer() const {
  return input_factory_ ? input_factory_() : nullptr;
}

QuantRecipe::LayerQuantizers QuantRecipe::layer(const std::string& name, LayerPosition pos) const {
  LayerQuantizers out;
  if (layer_rules_.matching(name, pos).empty()) {
    out.weight = weight_json_;
    out.input = input_json_;
    out.make_weight = weight_factory_;
    out.make_input = input_factory_;
    return out;
  }
  const FamilyInfo& info = family_info(family_);
  out.weight =
      layer_rules_.resolve(name, pos, "weight", weight_json_, json::parse(info.weight_default));
  out.input =
      layer_rules_.resolve(name, pos, "input", input_json_, json::parse(info.input_default));
  const std::string at = "layers[" + name + "].";
  if (!out.weight.is_null())
    out.make_weight = info.parse(out.weight, "weight", at + "weight").weight;
  if (!out.input.is_null()) out.make_input = info.parse(out.input, "input", at + "input").input;
  return out;
}

}  // namespace qgrad::quant
