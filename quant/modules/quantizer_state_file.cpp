// quantizer_state_json / apply_quantizer_state: the quantizers of a model found by type, their
// settings as JSON, their state dicts as exact JSON values, and the strict restore.
#include "quant/modules/quantizer_state_file.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/file_io.h"
#include "core/json_parse.h"
#include "quant/horizon/horizon_qparams.h"
#include "quant/modules/aimet_quantizer.h"
#include "quant/modules/fake_quantize.h"
#include "quant/modules/fused_fake_quantize.h"
#include "quant/modules/horizon_fake_quantize.h"
#include "quant/modules/lazy_buffer.h"
#include "quant/modules/learnable_fake_quantize.h"
#include "quant/modules/observer_module.h"
#include "quant/modules/tensor_quantizer.h"
#include "quant/nvidia/quant_descriptor.h"
#include "quant/observer/quant_dtype.h"

namespace qgrad::quant {

namespace {

struct Described {
  std::string family;
  nlohmann::json settings;
};

nlohmann::json ao_settings(const ObserverConfig& c, std::int64_t qmin, std::int64_t qmax,
                           std::int64_t ch_axis) {
  return {{"observer", observer_kind_name(c.kind)},
          {"dtype", ao::quant_dtype_name(c.options.dtype_)},
          {"qscheme", ao::qscheme_name(c.options.qscheme_)},
          {"reduce_range", c.options.reduce_range_},
          {"quant_min", qmin},
          {"quant_max", qmax},
          {"ch_axis", ch_axis}};
}

// The family and settings of a quantizer module; nullopt for any other module.
std::optional<Described> describe(const nn::Module& m) {
  if (const auto* q = dynamic_cast<const FakeQuantize*>(&m))
    return Described{"torch_ao", ao_settings(q->config().observer, q->quant_min(), q->quant_max(),
                                             q->ch_axis())};
  if (const auto* q = dynamic_cast<const FusedMovingAvgObsFakeQuantize*>(&m))
    return Described{"torch_ao", ao_settings(q->config().observer, q->quant_min(), q->quant_max(),
                                             q->ch_axis())};
  if (const auto* q = dynamic_cast<const LearnableFakeQuantize*>(&m)) {
    nlohmann::json s =
        ao_settings(q->config().observer, q->quant_min(), q->quant_max(), q->ch_axis());
    s["use_grad_scaling"] = q->config().use_grad_scaling;
    s["init"] = learnable_init_name(q->config().init);
    return Described{"lsq", s};
  }
  if (const auto* q = dynamic_cast<const TensorQuantizer*>(&m))
    return Described{"nvidia", q->descriptor().to_json()};
  if (const auto* q = dynamic_cast<const HorizonFakeQuantize*>(&m)) {
    const horizon::FakeQuantizeOptions& o = q->options();
    return Described{
        "horizon",
        {{"dtype", horizon::qdtype_name(o.dtype_)},
         {"saturate", o.saturate_},
         {"round_mode",
          o.round_mode_ == horizon::RoundMode::HalfToEven ? "half_to_even" : "half_up"},
         {"ch_axis", o.ch_axis_ ? nlohmann::json(*o.ch_axis_) : nlohmann::json(nullptr)},
         {"channel_len", o.channel_len_},
         {"averaging_constant", o.averaging_constant_}}};
  }
  if (const auto* q = dynamic_cast<const AimetQuantizeDequantize*>(&m))
    return Described{"aimet",
                     {{"shape", std::vector<std::int64_t>(q->shape().begin(), q->shape().end())},
                      {"bitwidth", q->bitwidth()},
                      {"symmetric", q->symmetric()}}};
  return std::nullopt;
}

// The quantizer modules of `model` (outermost only: an observer inside one is its state).
// (named_modules() is non-const in nn::Module; the writer only reads what it returns.)
std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>> quantizers(nn::Module& model) {
  std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>> out;
  for (const auto& item : model.named_modules()) {
    if (!describe(*item.value)) continue;
    bool nested = false;
    for (const auto& o : out) nested = nested || item.key.rfind(o.first + ".", 0) == 0;
    if (!nested) out.emplace_back(item.key, item.value);
  }
  return out;
}

nlohmann::json number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

double read_number(const nlohmann::json& v, const std::string& what) {
  if (v.is_number()) return v.get<double>();
  if (v == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (v == "inf") return std::numeric_limits<double>::infinity();
  if (v == "-inf") return -std::numeric_limits<double>::infinity();
  throw ValueError(what + ": expected a number, \"inf\", \"-inf\" or \"nan\", got " + v.dump());
}

nlohmann::json tensor_json(const Tensor& t) {
  const Tensor c = t.detach().contiguous();
  nlohmann::json values = nlohmann::json::array();
  if (is_floating(c.dtype())) {
    for (double v : c.to_vector<double>()) values.push_back(number(v));
  } else {
    for (std::int64_t v : c.to_vector<std::int64_t>()) values.push_back(v);
  }
  return {{"dtype", dtype_name(c.dtype())},
          {"shape", std::vector<std::int64_t>(c.shape().begin(), c.shape().end())},
          {"values", values}};
}

DType dtype_from_name(const std::string& name, const std::string& what) {
  for (DType d : {DType::Float32, DType::Float64, DType::Int8, DType::UInt8, DType::Int16,
                  DType::Int32, DType::Int64})
    if (name == dtype_name(d)) return d;
  throw ValueError(what + ": unknown dtype '" + name + "'");
}

// The values an integer dtype holds.
std::pair<std::int64_t, std::int64_t> integer_range(DType d) {
  switch (d) {
    case DType::Int8:
      return {-128, 127};
    case DType::UInt8:
      return {0, 255};
    case DType::Int16:
      return {-32768, 32767};
    case DType::Int32:
      return {std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()};
    default:
      return {std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()};
  }
}

Tensor tensor_from_json(const nlohmann::json& j, const std::string& what) {
  QGRAD_CHECK(j.is_object() && j.contains("dtype") && j.contains("shape") && j.contains("values") &&
                  j["dtype"].is_string() && j["shape"].is_array() && j["values"].is_array(),
              ValueError, what, ": expected {\"dtype\", \"shape\", \"values\"}");
  const DType dtype = dtype_from_name(j["dtype"].get<std::string>(), what);
  Shape shape;
  std::int64_t numel = 1;
  for (const nlohmann::json& d : j["shape"]) {
    QGRAD_CHECK(d.is_number_integer() && d.get<std::int64_t>() >= 0 &&
                    d.get<std::int64_t>() <= (std::int64_t{1} << 31),
                ValueError, what, ": bad shape entry ", d.dump());
    shape.push_back(d.get<std::int64_t>());
    numel *= shape.back();
    QGRAD_CHECK(numel <= (std::int64_t{1} << 31), ValueError, what, ": shape too large");
  }
  const nlohmann::json& values = j["values"];
  QGRAD_CHECK(static_cast<std::int64_t>(values.size()) == numel, ValueError, what, ": ",
              values.size(), " values for shape ", shape_str(shape));
  if (is_floating(dtype)) {
    std::vector<double> v;
    for (const nlohmann::json& x : values) v.push_back(read_number(x, what));
    return from_vector<double>(v, shape).to(dtype);
  }
  // Each integer must fit the dtype: .to(dtype) wraps (a fake_quant_enabled of 256 became 0 in
  // uint8, a zero point of 2^32 became 0 in int32), and JSON's unsigned 2^63.. would wrap in int64.
  const auto [lo, hi] = integer_range(dtype);
  std::vector<std::int64_t> v;
  for (const nlohmann::json& x : values) {
    QGRAD_CHECK(x.is_number_integer(), ValueError, what, ": expected integers, got ", x.dump());
    const bool fits = x.is_number_unsigned()
                          ? x.get<std::uint64_t>() <= static_cast<std::uint64_t>(hi)
                          : x.get<std::int64_t>() >= lo && x.get<std::int64_t>() <= hi;
    QGRAD_CHECK(fits, ValueError, what, ": ", x.dump(), " does not fit ", dtype_name(dtype), " [",
                lo, ", ", hi, "]");
    v.push_back(x.get<std::int64_t>());
  }
  return from_vector<std::int64_t>(v, shape).to(dtype);
}

}  // namespace

nlohmann::json quantizer_state_json(const nn::Module& model) {
  NoGradGuard no_grad;
  nlohmann::json qs = nlohmann::json::object();
  for (const auto& [name, module] : quantizers(const_cast<nn::Module&>(model))) {
    const Described d = *describe(*module);
    nlohmann::json state = nlohmann::json::object();
    for (const auto& item : module->state_dict()) state[item.key] = tensor_json(item.value);
    qs[name] = {{"family", d.family},
                {"module", module->name()},
                {"settings", d.settings},
                {"state", state}};
  }
  QGRAD_CHECK(!qs.empty(), ValueError,
              "quantizer state: the model has no quantizer (a float model; train or quantize it "
              "with a recipe first)");
  return {
      {"format", kQuantizerStateFormat}, {"version", kQuantizerStateVersion}, {"quantizers", qs}};
}

void save_quantizer_state(const nn::Module& model, const std::string& path) {
  write_file_atomic(path, quantizer_state_json(model).dump(1) + "\n");
}

std::size_t apply_quantizer_state(nn::Module& model, const nlohmann::json& file,
                                  const std::string& what) {
  // Compared as JSON: value("format", "") threw nlohmann's type_error for a non-string format.
  QGRAD_CHECK(file.is_object() && file.contains("format") &&
                  file["format"] == nlohmann::json(kQuantizerStateFormat),
              ValueError, what, ": not a qgrad quantizer state file (\"format\" must be \"",
              kQuantizerStateFormat, "\")");
  QGRAD_CHECK(file.contains("version") && file["version"] == kQuantizerStateVersion, ValueError,
              what, ": unsupported version ", file.value("version", nlohmann::json()).dump(),
              " (this qgrad reads version ", kQuantizerStateVersion, ")");
  QGRAD_CHECK(file.contains("quantizers") && file["quantizers"].is_object(), ValueError, what,
              ": \"quantizers\" must be an object");
  const nlohmann::json& qs = file["quantizers"];
  const auto found = quantizers(model);
  std::set<std::string> in_model;
  for (const auto& q : found) in_model.insert(q.first);
  for (const auto& item : qs.items())
    QGRAD_CHECK(in_model.count(item.key()) != 0, ValueError, what, ": quantizer '", item.key(),
                "' is not in the model (quantize the model with the recipe the file was "
                "written from)");
  for (const auto& [name, module] : found) {
    QGRAD_CHECK(qs.contains(name), ValueError, what, ": the model's quantizer '", name,
                "' is missing from the file");
    const nlohmann::json& q = qs[name];
    const std::string where = what + ": quantizer '" + name + "'";
    QGRAD_CHECK(q.is_object() && q.contains("module") && q.contains("settings") &&
                    q.contains("state") && q["state"].is_object(),
                ValueError, where, ": expected \"family\", \"module\", \"settings\", \"state\"");
    QGRAD_CHECK(q["module"] == module->name(), ValueError, where, ": the file has a ",
                q["module"].dump(), ", the model a ", module->name());
    const Described d = *describe(*module);
    QGRAD_CHECK(q.contains("family") && q["family"] == d.family, ValueError, where,
                ": the file's family is ", q.value("family", nlohmann::json()).dump(),
                ", the model's \"", d.family, "\"");
    QGRAD_CHECK(q["settings"] == d.settings, ValueError, where, ": settings differ: the file has ",
                q["settings"].dump(), ", the model ", d.settings.dump());
    TensorDict dict;
    for (const auto& item : q["state"].items())
      dict.insert(item.key(),
                  tensor_from_json(item.value(), where + " state '" + item.key() + "'"));
    try {
      load_quant_state_dict(*module, dict, /*strict=*/true);
    } catch (const Error& e) {
      throw ValueError(where + ": " + e.what());
    }
  }
  return found.size();
}

std::size_t load_quantizer_state(nn::Module& model, const std::string& path) {
  const std::string what = "quantizers '" + path + "'";
  const std::string text = read_file(path, "quantizer state");
  return apply_quantizer_state(model, parse_json(text, what), what);
}

}  // namespace qgrad::quant
