// results.json (schema "qgrad.results/1", docs/results_format.md): the accuracy of models,
// methods (float, QAT, PTQ), recipes and bit widths over several seeds, which `qgrad reproduce`
// is to write and `qgrad plot` draws. ResultsFile is the checked form: results_from_json
// refuses anything the format does not allow (a missing or unknown key, an accuracy outside
// [0, 1], a mean or std that disagrees with the accuracies) with a UsageError naming the key
// path, such as `cells[2].accuracy[1] must be a fraction in [0, 1] or null, got 88.1`, and
// results_to_json writes the same form back. Accuracies are fractions; NaN is a diverged or
// missing seed (JSON null).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qgrad::cli {

inline constexpr const char* kResultsSchema = "qgrad.results/1";

struct ResultCell {
  std::string model;
  std::string method;                       // "float", "qat" or "ptq"
  std::optional<std::string> recipe;        // none for float
  std::optional<std::string> family;        // none for float
  std::optional<std::int64_t> weight_bits;  // none for float
  std::optional<std::int64_t> act_bits;     // none when layer inputs stay float
  std::vector<std::int64_t> seeds;
  std::vector<double> accuracy;  // one per seed, NaN for null
  double mean = 0;               // NaN when every accuracy is NaN
  double stddev = 0;
};

struct ResultsFile {
  std::string dataset;  // empty when not given
  std::vector<ResultCell> cells;
};

// The mean and sample standard deviation (n - 1; 0 for one value) of the non-NaN values; NaN
// for both when there are none.
std::pair<double, double> mean_and_std(const std::vector<double>& values);

// Checks `j` against qgrad.results/1. Throws UsageError naming the key path.
ResultsFile results_from_json(const nlohmann::json& j);
nlohmann::json results_to_json(const ResultsFile& results);

}  // namespace qgrad::cli
