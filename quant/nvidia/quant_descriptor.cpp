// QuantDescriptor validation and its JSON form (non-default fields only, exact round trip).
#include "quant/nvidia/quant_descriptor.h"

#include <cmath>
#include <limits>
#include <set>

#include "core/error.h"
#include "core/json_parse.h"
#include "quant/nvidia/tensor_quant.h"

namespace qgrad::nvidia {

namespace {

constexpr const char* kOp = "QuantDescriptor";
using json = nlohmann::json;
using AxisSizes = std::vector<std::pair<std::int64_t, std::int64_t>>;

std::optional<CalibMethod> parse_calib(const std::string& s) {
  if (s == "max") return CalibMethod::Max;
  if (s == "histogram") return CalibMethod::Histogram;
  return std::nullopt;
}

// ---- JSON writers ----
json num_bits_json(const NumBits& nb) {
  if (!nb.is_float()) return nb.bits();
  return json::array({nb.format().exponent_bits, nb.format().mantissa_bits});
}

json axis_sizes_json(const AxisSizes& v, json obj = json::object()) {
  for (const auto& [axis, size] : v) obj[std::to_string(axis)] = size;
  return obj;
}

json block_sizes_json(const BlockSizes& b) {
  json j = axis_sizes_json(b.axes);
  j["type"] = b.type == BlockQuantType::Static ? "static" : "dynamic";
  if (b.scale_bits) j["scale_bits"] = num_bits_json(*b.scale_bits);
  if (!b.scale_block_sizes.empty()) j["scale_block_sizes"] = axis_sizes_json(b.scale_block_sizes);
  return j;
}

json amax_json(const AmaxValue& a, std::size_t dim, std::size_t& pos) {
  if (dim == a.shape.size()) return a.values[pos++];
  json arr = json::array();
  for (std::int64_t i = 0; i < a.shape[dim]; ++i) arr.push_back(amax_json(a, dim + 1, pos));
  return arr;
}

// ---- JSON readers ----
[[noreturn]] void bad(const std::string& field, const std::string& what) {
  throw ValueError(std::string(kOp) + ".from_json: '" + field + "' " + what);
}

// An integer that fits int64 (nlohmann keeps 2^63..2^64-1 unsigned; get<int64_t>() would wrap).
std::int64_t get_int(const json& j, const std::string& field) {
  const bool fits = j.is_number_integer() &&
                    !(j.is_number_unsigned() &&
                      j.get<std::uint64_t>() >
                          static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
  if (!fits) bad(field, "must be an integer in int64's range, got " + describe_json(j));
  return j.get<std::int64_t>();
}

bool get_bool(const json& j, const std::string& field) {
  if (!j.is_boolean()) bad(field, "must be true or false, got " + describe_json(j));
  return j.get<bool>();
}

// A bit count: checked against [0, 64] before the narrowing to int, so 4294967304 is an error and
// not 8; NumBits and the descriptor's validation then check the exact ranges.
int get_bits(const json& j, const std::string& field) {
  const std::int64_t v = get_int(j, field);
  if (v < 0 || v > 64) bad(field, "must be a bit count in [0, 64], got " + describe_json(j));
  return static_cast<int>(v);
}

NumBits get_num_bits(const json& j, const std::string& field) {
  if (j.is_number_integer()) return NumBits(get_bits(j, field));
  if (j.is_array() && j.size() == 2 && j[0].is_number_integer() && j[1].is_number_integer())
    return NumBits(get_bits(j[0], field + "[0]"), get_bits(j[1], field + "[1]"));
  bad(field, "must be an integer or a pair [E, M], got " + describe_json(j));
}

std::int64_t parse_axis_key(const std::string& key, const std::string& field) {
  std::size_t used = 0;
  std::int64_t v = 0;
  try {
    v = std::stoll(key, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != key.size()) bad(field, "has a key '" + key + "' that is not an axis");
  return v;
}

AxisSizes get_axis_sizes(const json& j, const std::string& field) {
  if (!j.is_object()) bad(field, "must be an object {axis: size}, got " + describe_json(j));
  AxisSizes v;
  for (auto it = j.begin(); it != j.end(); ++it)
    v.emplace_back(parse_axis_key(it.key(), field), get_int(it.value(), field + "." + it.key()));
  return v;
}

BlockSizes get_block_sizes(const json& j) {
  const std::string field = "block_sizes";
  if (!j.is_object()) bad(field, "must be an object, got " + describe_json(j));
  BlockSizes b;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (k == "type") {
      const json& t = it.value();
      if (t == "static")
        b.type = BlockQuantType::Static;
      else if (t == "dynamic")
        b.type = BlockQuantType::Dynamic;
      else
        bad(field + ".type", "must be \"static\" or \"dynamic\", got " + describe_json(t));
    } else if (k == "scale_bits") {
      b.scale_bits = get_num_bits(it.value(), field + ".scale_bits");
    } else if (k == "scale_block_sizes") {
      b.scale_block_sizes = get_axis_sizes(it.value(), field + ".scale_block_sizes");
    } else {
      b.axes.emplace_back(parse_axis_key(k, field), get_int(it.value(), field + "." + k));
    }
  }
  return b;
}

void read_amax(const json& j, std::size_t dim, AmaxValue& a) {
  if (j.is_number()) {
    if (dim != a.shape.size()) bad("amax", "is not a rectangular array");
    a.values.push_back(j.get<double>());
    return;
  }
  if (!j.is_array())
    bad("amax", "must be a number or an array of numbers, got " + describe_json(j));
  if (dim == a.shape.size()) {
    if (!a.values.empty()) bad("amax", "is not a rectangular array");
    a.shape.push_back(static_cast<std::int64_t>(j.size()));
  } else if (dim > a.shape.size() || a.shape[dim] != static_cast<std::int64_t>(j.size())) {
    bad("amax", "is not a rectangular array");
  }
  for (const json& e : j) read_amax(e, dim + 1, a);
}

}  // namespace

const char* calib_method_name(CalibMethod m) {
  return m == CalibMethod::Max ? "max" : "histogram";
}

const char* fp8_recipe_name(Fp8Recipe r) {
  return r == Fp8Recipe::Modelopt ? "modelopt" : "pytorch_quantization";
}

QuantDescriptor::QuantDescriptor() = default;

QuantDescriptor::QuantDescriptor(const QuantDescriptorOptions& opts) : o_(opts) {
  const auto& nb = o_.num_bits_;
  if (nb.is_float()) {
    minifloat_spec(nb.format(), kOp);
    QGRAD_CHECK(!o_.unsigned_, ValueError, kOp, ": unsigned applies to integer num_bits only, ",
                "got num_bits ", nb.str());
    QGRAD_CHECK(!o_.narrow_range_, ValueError, kOp,
                ": narrow_range applies to integer num_bits only, got num_bits ", nb.str());
  } else {
    int_quant_range(nb.bits(), o_.unsigned_, o_.narrow_range_, kOp);
  }
  QGRAD_CHECK(o_.axis_.is_none() || !o_.block_sizes_, ValueError, kOp,
              ": axis and block_sizes are mutually exclusive");
  if (o_.axis_.kind == QuantAxis::Kind::Int) {
    QGRAD_CHECK(o_.axis_.axes.size() == 1, ValueError, kOp, ": an int axis holds one value");
  } else if (o_.axis_.kind == QuantAxis::Kind::Tuple) {
    QGRAD_CHECK(!o_.axis_.axes.empty(), ValueError, kOp, ": axis tuple is empty");
    std::set<std::int64_t> seen(o_.axis_.axes.begin(), o_.axis_.axes.end());
    QGRAD_CHECK(seen.size() == o_.axis_.axes.size(), ValueError, kOp,
                ": axis tuple repeats an axis");
  }
  if (o_.block_sizes_) o_.block_sizes_->validate(kOp);
  if (o_.amax_) {
    const AmaxValue& a = *o_.amax_;
    QGRAD_CHECK(
        !a.values.empty() && static_cast<std::int64_t>(a.values.size()) == numel_of(a.shape),
        ValueError, kOp, ": amax has ", a.values.size(), " values for shape ", a.shape);
    for (double v : a.values)
      QGRAD_CHECK(std::isfinite(v) && v >= 0, ValueError, kOp,
                  ": amax values must be finite and >= 0, got ", v);
    QGRAD_CHECK(!o_.dynamic_, ValueError, kOp,
                ": a dynamic quantizer computes amax per call; it cannot also have a fixed amax");
  }
  if (o_.learn_amax_) {
    QGRAD_CHECK(o_.axis_.is_none() && !o_.block_sizes_, ValueError, kOp,
                ": learn_amax supports per-tensor amax only (no axis, no block_sizes)");
    QGRAD_CHECK(!o_.dynamic_, ValueError, kOp, ": learn_amax and dynamic exclude each other");
  }
  if (o_.scale_amax_) {
    QGRAD_CHECK(std::isfinite(*o_.scale_amax_) && *o_.scale_amax_ > 0, ValueError, kOp,
                ": scale_amax must be finite and > 0, got ", *o_.scale_amax_);
  }
  const auto cm = parse_calib(o_.calib_method_);
  QGRAD_CHECK(cm.has_value(), ValueError, kOp, ": unknown calib_method '", o_.calib_method_,
              "' (expected \"max\" or \"histogram\")");
  calib_ = *cm;
  QGRAD_CHECK(calib_ != CalibMethod::Histogram || (o_.axis_.is_none() && !o_.block_sizes_),
              ValueError, kOp,
              ": calib_method \"histogram\" supports per-tensor quantization only (no axis, "
              "no block_sizes)");
  if (o_.fp8_recipe_ == "modelopt") {
    fp8_ = Fp8Recipe::Modelopt;
    QGRAD_CHECK(nb.is_float() && nb.format() == kE4M3, ValueError, kOp,
                ": fp8_recipe \"modelopt\" needs num_bits (4, 3) (modelopt's FP8 fake quant is "
                "E4M3 only), got num_bits ",
                nb.str());
  } else {
    QGRAD_CHECK(o_.fp8_recipe_ == "pytorch_quantization", ValueError, kOp, ": unknown fp8_recipe '",
                o_.fp8_recipe_, "' (expected \"pytorch_quantization\" or \"modelopt\")");
  }
}

json QuantDescriptor::to_json() const {
  const QuantDescriptorOptions def;
  json j = json::object();
  if (o_.num_bits_ != def.num_bits_) j["num_bits"] = num_bits_json(o_.num_bits_);
  if (o_.name_) j["name"] = *o_.name_;
  if (o_.fake_quant_ != def.fake_quant_) j["fake_quant"] = o_.fake_quant_;
  if (o_.axis_.kind == QuantAxis::Kind::Int) j["axis"] = o_.axis_.axes[0];
  if (o_.axis_.kind == QuantAxis::Kind::Tuple) j["axis"] = o_.axis_.axes;
  if (o_.block_sizes_) j["block_sizes"] = block_sizes_json(*o_.block_sizes_);
  if (o_.amax_) {
    std::size_t pos = 0;
    j["amax"] = amax_json(*o_.amax_, 0, pos);
  }
  if (o_.learn_amax_ != def.learn_amax_) j["learn_amax"] = o_.learn_amax_;
  if (o_.scale_amax_) j["scale_amax"] = *o_.scale_amax_;
  if (calib_ != CalibMethod::Max) j["calib_method"] = calib_method_name(calib_);
  if (o_.unsigned_ != def.unsigned_) j["unsigned"] = o_.unsigned_;
  if (o_.narrow_range_ != def.narrow_range_) j["narrow_range"] = o_.narrow_range_;
  if (o_.dynamic_ != def.dynamic_) j["dynamic"] = o_.dynamic_;
  if (fp8_ != Fp8Recipe::PytorchQuantization) j["fp8_recipe"] = fp8_recipe_name(fp8_);
  return j;
}

json QuantDescriptor::to_dict() const {
  const QuantDescriptorOptions def;
  json j = json::object();
  j["num_bits"] = num_bits_json(o_.num_bits_);
  j["name"] = o_.name_ ? json(*o_.name_) : json(nullptr);
  if (!o_.fake_quant_) j["fake_quant"] = false;
  if (o_.axis_.kind == QuantAxis::Kind::Int) j["axis"] = o_.axis_.axes[0];
  if (o_.axis_.kind == QuantAxis::Kind::Tuple) j["axis"] = o_.axis_.axes;
  if (o_.amax_) {
    AmaxValue a = *o_.amax_;
    for (double& v : a.values) v = static_cast<double>(static_cast<float>(v));
    std::size_t pos = 0;
    j["amax"] = amax_json(a, 0, pos);
  }
  if (o_.scale_amax_) j["scale_amax"] = *o_.scale_amax_;
  if (o_.learn_amax_) j["learn_amax"] = true;
  if (o_.unsigned_) j["unsigned"] = true;
  if (o_.block_sizes_) j["block_sizes"] = block_sizes_json(*o_.block_sizes_);
  if (o_.dynamic_ != def.dynamic_) j["dynamic"] = o_.dynamic_;
  if (fp8_ != Fp8Recipe::PytorchQuantization) j["fp8_recipe"] = fp8_recipe_name(fp8_);
  return j;
}

QuantDescriptor QuantDescriptor::from_dict(const json& j) {
  QGRAD_CHECK(j.is_object(), ValueError, kOp, ".from_dict: expected a JSON object, got ",
              describe_json(j));
  json k = j;
  const auto name = k.find("name");
  if (name != k.end() && name->is_null()) k.erase(name);
  return from_json(k);
}

QuantDescriptor QuantDescriptor::from_json(const json& j) {
  return QuantDescriptor(read_options(j));
}

QuantDescriptorOptions QuantDescriptor::read_options(const json& j) {
  QGRAD_CHECK(j.is_object(), ValueError, kOp, ".from_json: expected a JSON object, got ",
              describe_json(j));
  QuantDescriptorOptions o;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    if (k == "num_bits") {
      o.num_bits(get_num_bits(v, k));
    } else if (k == "name") {
      if (!v.is_string()) bad(k, "must be a string, got " + describe_json(v));
      o.name(v.get<std::string>());
    } else if (k == "fake_quant") {
      o.fake_quant(get_bool(v, k));
    } else if (k == "axis") {
      if (v.is_number_integer()) {
        o.axis(get_int(v, k));
      } else if (v.is_array()) {
        std::vector<std::int64_t> axes;
        for (const json& e : v) axes.push_back(get_int(e, k));
        o.axis(QuantAxis::tuple(axes));
      } else {
        bad(k, "must be an integer or a list of integers, got " + describe_json(v));
      }
    } else if (k == "block_sizes") {
      o.block_sizes(get_block_sizes(v));
    } else if (k == "amax") {
      AmaxValue a;
      read_amax(v, 0, a);
      o.amax(a);
    } else if (k == "learn_amax") {
      o.learn_amax(get_bool(v, k));
    } else if (k == "scale_amax") {
      if (!v.is_number()) bad(k, "must be a number, got " + describe_json(v));
      o.scale_amax(v.get<double>());
    } else if (k == "calib_method") {
      if (!v.is_string()) bad(k, "must be a string, got " + describe_json(v));
      o.calib_method(v.get<std::string>());
    } else if (k == "unsigned") {
      o.is_unsigned(get_bool(v, k));
    } else if (k == "narrow_range") {
      o.narrow_range(get_bool(v, k));
    } else if (k == "dynamic") {
      o.dynamic(get_bool(v, k));
    } else if (k == "fp8_recipe") {
      if (!v.is_string()) bad(k, "must be a string, got " + describe_json(v));
      o.fp8_recipe(v.get<std::string>());
    } else {
      throw ValueError(std::string(kOp) + ".from_json: unknown field '" + k + "'");
    }
  }
  return o;
}

QuantDescriptor QuantDescriptor::parse(const std::string& text) {
  json j;
  try {
    j = parse_json(text, std::string(kOp) + ".parse");
  } catch (const IOError& e) {
    throw ValueError(e.what());
  }
  return from_json(j);
}

bool QuantDescriptor::operator==(const QuantDescriptor& d) const {
  const QuantDescriptorOptions& a = o_;
  const QuantDescriptorOptions& b = d.o_;
  return a.num_bits_ == b.num_bits_ && a.name_ == b.name_ && a.fake_quant_ == b.fake_quant_ &&
         a.axis_ == b.axis_ && a.block_sizes_ == b.block_sizes_ && a.amax_ == b.amax_ &&
         a.learn_amax_ == b.learn_amax_ && a.scale_amax_ == b.scale_amax_ && calib_ == d.calib_ &&
         a.unsigned_ == b.unsigned_ && a.narrow_range_ == b.narrow_range_ &&
         a.dynamic_ == b.dynamic_ && fp8_ == d.fp8_;
}

}  // namespace qgrad::nvidia
