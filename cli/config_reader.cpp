// ConfigReader: the type and range checks, and the error messages naming the key path.
#include "cli/config_reader.h"

#include <cmath>
#include <limits>
#include <optional>
#include <sstream>

#include "cli/usage_error.h"
#include "core/json_parse.h"

namespace qgrad::cli {

namespace {

std::string format_number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// A JSON number that is not a NaN/inf (JSON has none, but be safe with parsed values).
bool is_number(const nlohmann::json& v) {
  return v.is_number() && std::isfinite(v.get<double>());
}

// The JSON integer `v` as int64, or nullopt when it is not an integer (3.0, "3") or lies
// beyond int64 (nlohmann stores 2^63..2^64-1 as unsigned, which get<int64_t>() would wrap).
std::optional<std::int64_t> as_int64(const nlohmann::json& v) {
  if (v.is_number_unsigned()) {
    if (v.get<std::uint64_t>() >
        static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return std::nullopt;
    return static_cast<std::int64_t>(v.get<std::uint64_t>());
  }
  if (v.is_number_integer()) return v.get<std::int64_t>();
  return std::nullopt;
}

// "an integer >= 1", "an integer in [1, 100000]".
std::string integer_rule(std::int64_t min_value, std::int64_t max_value) {
  if (max_value == std::numeric_limits<std::int64_t>::max())
    return "an integer >= " + std::to_string(min_value);
  return "an integer in [" + std::to_string(min_value) + ", " + std::to_string(max_value) + "]";
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string s;
  for (std::size_t i = 0; i < items.size(); ++i) s += (i ? sep : "") + items[i];
  return s;
}

}  // namespace

NumberRule NumberRule::any() {
  return {[](double) { return true; }, "a number"};
}
NumberRule NumberRule::positive() {
  return {[](double x) { return x > 0; }, "a positive number"};
}
NumberRule NumberRule::non_negative() {
  return {[](double x) { return x >= 0; }, "a number >= 0"};
}
NumberRule NumberRule::in_half_open(double lo, double hi) {
  return {[lo, hi](double x) { return x >= lo && x < hi; },
          "a number in [" + format_number(lo) + ", " + format_number(hi) + ")"};
}
NumberRule NumberRule::in_closed(double lo, double hi) {
  return {[lo, hi](double x) { return x >= lo && x <= hi; },
          "a number in [" + format_number(lo) + ", " + format_number(hi) + "]"};
}

ConfigReader::ConfigReader(nlohmann::json value, std::string path, std::string root_name)
    : value_(std::move(value)), path_(std::move(path)), root_name_(std::move(root_name)) {
  if (value_.is_null()) value_ = nlohmann::json::object();
  if (!value_.is_object()) {
    const std::string what = path_.empty() ? root_name_ : path_;
    throw UsageError(what + " must be a JSON object, got " + shown(value_));
  }
}

std::string ConfigReader::shown(const nlohmann::json& value) {
  return value.is_structured() ? describe_json(value) : json_scalar_text(value);
}

std::string ConfigReader::key_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

const nlohmann::json* ConfigReader::find(const std::string& key) const {
  auto it = value_.find(key);
  if (it == value_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool ConfigReader::has(const std::string& key) const {
  return find(key) != nullptr;
}

void ConfigReader::fail(const std::string& key, const std::string& message) const {
  throw UsageError(key_path(key) + " " + message);
}

void ConfigReader::bad_value(const std::string& key, const std::string& expected,
                             const nlohmann::json& got) const {
  fail(key, "must be " + expected + ", got " + shown(got));
}

std::optional<nlohmann::json> ConfigReader::raw(const std::string& key) {
  mark(key);
  const nlohmann::json* v = find(key);
  if (!v) return std::nullopt;
  return *v;
}

double ConfigReader::number(const std::string& key, double fallback, const NumberRule& rule) {
  mark(key);
  const nlohmann::json* v = find(key);
  if (!v) return fallback;
  if (!is_number(*v) || !rule.ok(v->get<double>())) bad_value(key, rule.expected, *v);
  return v->get<double>();
}

std::int64_t ConfigReader::integer(const std::string& key, std::int64_t fallback,
                                   std::int64_t min_value, std::int64_t max_value) {
  mark(key);
  const nlohmann::json* v = find(key);
  if (!v) return fallback;
  const std::optional<std::int64_t> x = as_int64(*v);
  if (!x) bad_value(key, integer_rule(min_value, max_value), *v);
  // Name the bound that was crossed, so "epochs must be an integer >= 1, got 0" stays short.
  if (*x < min_value) bad_value(key, "an integer >= " + std::to_string(min_value), *v);
  if (*x > max_value) bad_value(key, "an integer <= " + std::to_string(max_value), *v);
  return *x;
}

bool ConfigReader::boolean(const std::string& key, bool fallback) {
  mark(key);
  const nlohmann::json* v = find(key);
  if (!v) return fallback;
  if (!v->is_boolean()) bad_value(key, "true or false", *v);
  return v->get<bool>();
}

std::string ConfigReader::string(const std::string& key, const std::string& fallback) {
  mark(key);
  const nlohmann::json* v = find(key);
  if (!v) return fallback;
  if (!v->is_string() || v->get<std::string>().empty()) bad_value(key, "a non-empty string", *v);
  return v->get<std::string>();
}

std::string ConfigReader::choice(const std::string& key, const std::string& fallback,
                                 const std::vector<std::string>& choices) {
  mark(key);
  const nlohmann::json* v = find(key);
  if (!v) return fallback;
  const std::string expected = "one of \"" + join(choices, "\", \"") + "\"";
  if (!v->is_string()) bad_value(key, expected, *v);
  const std::string s = v->get<std::string>();
  for (const std::string& c : choices)
    if (s == c) return s;
  bad_value(key, expected, *v);
}

std::vector<double> ConfigReader::numbers(const std::string& key,
                                          const std::vector<double>& fallback,
                                          const NumberRule& rule, std::size_t max_size) {
  mark(key);
  const nlohmann::json* v = find(key);
  if (!v) return fallback;
  const std::string expected =
      rule.expected + " or a list of 1 to " + std::to_string(max_size) + " such numbers";
  if (is_number(*v)) {
    if (!rule.ok(v->get<double>())) bad_value(key, expected, *v);
    return {v->get<double>()};
  }
  if (!v->is_array() || v->empty() || v->size() > max_size) bad_value(key, expected, *v);
  std::vector<double> out;
  for (const nlohmann::json& e : *v) {
    if (!is_number(e) || !rule.ok(e.get<double>())) bad_value(key, expected, *v);
    out.push_back(e.get<double>());
  }
  return out;
}

std::vector<double> ConfigReader::fixed_numbers(const std::string& key,
                                                const std::vector<double>& fallback,
                                                const NumberRule& rule, std::size_t size) {
  mark(key);
  const nlohmann::json* v = find(key);
  if (!v) return fallback;
  std::string expected = "a list of " + std::to_string(size) + " numbers, each " + rule.expected;
  if (!v->is_array() || v->size() != size) bad_value(key, expected, *v);
  std::vector<double> out;
  for (const nlohmann::json& e : *v) {
    if (!is_number(e) || !rule.ok(e.get<double>())) bad_value(key, expected, *v);
    out.push_back(e.get<double>());
  }
  return out;
}

std::vector<std::int64_t> ConfigReader::increasing_integers(
    const std::string& key, const std::vector<std::int64_t>& fallback, std::int64_t min_value,
    std::int64_t max_value) {
  mark(key);
  const nlohmann::json* v = find(key);
  if (!v) return fallback;
  const std::string expected = "a non-empty list of strictly increasing integers, each " +
                               integer_rule(min_value, max_value);
  if (!v->is_array() || v->empty()) bad_value(key, expected, *v);
  std::vector<std::int64_t> out;
  for (const nlohmann::json& e : *v) {
    const std::optional<std::int64_t> x = as_int64(e);
    if (!x || *x < min_value || *x > max_value || (!out.empty() && *x <= out.back()))
      fail(key, "must be " + expected + ", got " + shown(e) + " at position " +
                    std::to_string(out.size()));
    out.push_back(*x);
  }
  return out;
}

ConfigReader ConfigReader::object(const std::string& key) {
  mark(key);
  const nlohmann::json* v = find(key);
  return ConfigReader(v ? *v : nlohmann::json::object(), key_path(key));
}

void ConfigReader::mark(const std::string& key) {
  if (known_set_.insert(key).second) known_.push_back(key);
}

void ConfigReader::finish() const {
  for (auto it = value_.begin(); it != value_.end(); ++it) {
    if (known_set_.count(it.key())) continue;
    const std::string where = path_.empty() ? root_name_ : "'" + path_ + "'";
    throw UsageError("unknown key '" + key_path(it.key()) + "' (" + where +
                     " accepts: " + join(known_, ", ") + ")");
  }
}

}  // namespace qgrad::cli
