// ResultsFile: the qgrad.results/1 checks (through ConfigReader, so every message names the key
// path) and the JSON writer.
#include "cli/results_file.h"

#include <cmath>
#include <limits>

#include "cli/config_reader.h"
#include "cli/usage_error.h"

namespace qgrad::cli {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// mean and std are stored rounded by whoever wrote them; 1e-6 of a fraction is far below
// anything a plot or a table shows.
constexpr double kSummaryTolerance = 1e-6;
constexpr std::int64_t kMaxBits = 32;

void require(const ConfigReader& r, const std::string& key) {
  if (!r.has(key)) r.fail(key, "is required");
}

// Present, null allowed (ConfigReader treats null as absent).
void require_key(const ConfigReader& r, const nlohmann::json& j, const std::string& key) {
  if (!j.contains(key)) r.fail(key, "is required (null when unknown)");
}

std::optional<std::string> optional_string(ConfigReader& r, const std::string& key) {
  if (!r.has(key)) {
    r.raw(key);  // marks it as known (an explicit null is allowed)
    return std::nullopt;
  }
  return r.string(key, "");
}

std::optional<std::int64_t> optional_bits(ConfigReader& r, const std::string& key) {
  if (!r.has(key)) {
    r.raw(key);
    return std::nullopt;
  }
  return r.integer(key, 0, 1, kMaxBits);
}

// A fraction in [0, 1], or null (NaN).
double nullable_fraction(const ConfigReader& r, const std::string& key, const nlohmann::json& v) {
  if (v.is_null()) return kNaN;
  if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 1))
    r.fail(key, "must be a fraction in [0, 1] or null, got " + ConfigReader::shown(v));
  return v.get<double>();
}

// Summaries are NaN exactly when every accuracy is NaN; otherwise they must agree.
void check_summary(const ConfigReader& r, const std::string& key, double stored, double computed) {
  const bool both_nan = std::isnan(stored) && std::isnan(computed);
  if (both_nan || std::abs(stored - computed) <= kSummaryTolerance) return;
  r.fail(key, "must be " + (std::isnan(computed) ? std::string("null") : std::to_string(computed)) +
                  " (computed from the accuracies), got " +
                  (std::isnan(stored) ? std::string("null") : std::to_string(stored)));
}

ResultCell cell_from_json(const nlohmann::json& j, const std::string& path) {
  ConfigReader r(j, path);
  for (const char* key : {"model", "method", "seeds", "accuracy"}) require(r, key);
  for (const char* key : {"mean", "std"}) require_key(r, j, key);
  ResultCell c;
  c.model = r.string("model", "");
  c.method = r.choice("method", "", {"float", "qat", "ptq"});
  c.recipe = optional_string(r, "recipe");
  c.family = optional_string(r, "family");
  c.weight_bits = optional_bits(r, "weight_bits");
  c.act_bits = optional_bits(r, "act_bits");
  if (c.method == "float") {
    for (const char* key : {"recipe", "family", "weight_bits", "act_bits"})
      if (r.has(key)) r.fail(key, "must be null for a float cell");
  } else {
    if (!c.weight_bits) r.fail("weight_bits", "is required for a " + c.method + " cell");
    if (!c.family) r.fail("family", "is required for a " + c.method + " cell");
  }
  c.seeds = r.increasing_integers("seeds", {}, 0);
  const nlohmann::json accuracy = *r.raw("accuracy");
  if (!accuracy.is_array() || accuracy.size() != c.seeds.size())
    r.fail("accuracy", "must be a list of " + std::to_string(c.seeds.size()) +
                           " fractions or nulls (one per seed), got " +
                           ConfigReader::shown(accuracy));
  for (std::size_t i = 0; i < accuracy.size(); ++i)
    c.accuracy.push_back(nullable_fraction(r, "accuracy[" + std::to_string(i) + "]", accuracy[i]));
  const auto [mean, stddev] = mean_and_std(c.accuracy);
  const nlohmann::json stored_mean = r.raw("mean").value_or(nullptr);
  const nlohmann::json stored_std = r.raw("std").value_or(nullptr);
  c.mean = nullable_fraction(r, "mean", stored_mean);
  if (!stored_std.is_null() && !(stored_std.is_number() && stored_std.get<double>() >= 0))
    r.fail("std", "must be a number >= 0 or null, got " + ConfigReader::shown(stored_std));
  c.stddev = stored_std.is_null() ? kNaN : stored_std.get<double>();
  check_summary(r, "mean", c.mean, mean);
  check_summary(r, "std", c.stddev, stddev);
  r.finish();
  return c;
}

nlohmann::json nullable(double v) {
  return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v);
}

template <typename T>
nlohmann::json nullable(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

std::pair<double, double> mean_and_std(const std::vector<double>& values) {
  double sum = 0;
  std::size_t n = 0;
  for (double v : values)
    if (!std::isnan(v)) sum += v, ++n;
  if (n == 0) return {kNaN, kNaN};
  const double mean = sum / static_cast<double>(n);
  double squares = 0;
  for (double v : values)
    if (!std::isnan(v)) squares += (v - mean) * (v - mean);
  return {mean, n > 1 ? std::sqrt(squares / static_cast<double>(n - 1)) : 0.0};
}

ResultsFile results_from_json(const nlohmann::json& j) {
  ConfigReader r(j, "", "the results file");
  require(r, "schema");
  const std::string schema = r.string("schema", "");
  if (schema != kResultsSchema)
    r.fail("schema", std::string("must be \"") + kResultsSchema + "\", got \"" + schema + "\"");
  ResultsFile out;
  out.dataset = r.string("dataset", "");
  require(r, "cells");
  const nlohmann::json cells = *r.raw("cells");
  if (!cells.is_array() || cells.empty())
    r.fail("cells", "must be a non-empty list of cells, got " + ConfigReader::shown(cells));
  for (std::size_t i = 0; i < cells.size(); ++i)
    out.cells.push_back(cell_from_json(cells[i], "cells[" + std::to_string(i) + "]"));
  r.finish();
  return out;
}

nlohmann::json results_to_json(const ResultsFile& results) {
  nlohmann::json cells = nlohmann::json::array();
  for (const ResultCell& c : results.cells) {
    nlohmann::json accuracy = nlohmann::json::array();
    for (double a : c.accuracy) accuracy.push_back(nullable(a));
    cells.push_back({{"model", c.model},
                     {"method", c.method},
                     {"recipe", nullable(c.recipe)},
                     {"family", nullable(c.family)},
                     {"weight_bits", nullable(c.weight_bits)},
                     {"act_bits", nullable(c.act_bits)},
                     {"seeds", c.seeds},
                     {"accuracy", accuracy},
                     {"mean", nullable(c.mean)},
                     {"std", nullable(c.stddev)}});
  }
  nlohmann::json j = {{"schema", kResultsSchema}};
  if (!results.dataset.empty()) j["dataset"] = results.dataset;
  j["cells"] = cells;
  return j;
}

}  // namespace qgrad::cli
