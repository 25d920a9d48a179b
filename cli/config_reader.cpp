// ConfigReader: the type and range checks, and the error messages naming the key path.
#include "cli/config_reader.h"

#include <cmath>
#include <sstream>

#include "cli/usage_error.h"

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

ConfigReader::ConfigReader(nlohmann::json value, std::string path)
    : value_(std::move(value)), path_(std::move(path)) {
  if (value_.is_null()) value_ = nlohmann::json::object();
  if (!value_.is_object()) {
    const std::string what = path_.empty() ? "the config" : path_;
    throw UsageError(what + " must be a JSON object, got " + value_.dump());
  }
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
  fail(key, "must be " + expected + ", got " + got.dump());
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
                                   std::int64_t min_value) {
  mark(key);
  const nlohmann::json* v = find(key);
  if (!v) return fallback;
  const std::string expected = "an integer >= " + std::to_string(min_value);
  if (v->is_number_unsigned()) {
    // Larger than int64 cannot be represented; everything fitting is >= 0 >= min or checked.
    if (v->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
      bad_value(key, expected, *v);
  } else if (!v->is_number_integer()) {
    bad_value(key, expected, *v);
  }
  const std::int64_t x = v->get<std::int64_t>();
  if (x < min_value) bad_value(key, expected, *v);
  return x;
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
    const std::string& key, const std::vector<std::int64_t>& fallback, std::int64_t min_value) {
  mark(key);
  const nlohmann::json* v = find(key);
  if (!v) return fallback;
  const std::string expected =
      "a non-empty list of strictly increasing integers >= " + std::to_string(min_value);
  if (!v->is_array() || v->empty()) bad_value(key, expected, *v);
  std::vector<std::int64_t> out;
  for (const nlohmann::json& e : *v) {
    if (!e.is_number_integer() || e.get<std::int64_t>() < min_value ||
        (!out.empty() && e.get<std::int64_t>() <= out.back()))
      bad_value(key, expected, *v);
    out.push_back(e.get<std::int64_t>());
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
    const std::string where = path_.empty() ? std::string("the config") : "'" + path_ + "'";
    throw UsageError("unknown key '" + key_path(it.key()) + "' (" + where +
                     " accepts: " + join(known_, ", ") + ")");
  }
}

}  // namespace qgrad::cli
