// sensitivity.json (schema "qgrad.sensitivity/1", docs/results_format.md): what quantizing each
// layer alone costs a float model, which `qgrad sensitivity` is to write and `qgrad plot`
// draws: the float accuracy, the accuracy with only one layer quantized (per layer) and the SQNR
// in dB of each of that layer's quantizers. sensitivity_from_json refuses anything the format
// does not allow with a UsageError naming the key path (`layers[1].sqnr_db.weight must be a
// number or null, got "high"`); sensitivity_to_json writes the same form back. Accuracies are
// fractions; NaN stands for JSON null.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace qgrad::cli {

inline constexpr const char* kSensitivitySchema = "qgrad.sensitivity/1";

struct LayerSensitivity {
  std::string name;                                     // dotted module name, unique
  double accuracy = 0;                                  // only this layer quantized
  std::vector<std::pair<std::string, double>> sqnr_db;  // by quantizer role, sorted by role
};

struct SensitivityFile {
  std::string model;
  std::string recipe;
  std::string checkpoint;  // empty when not given
  double float_accuracy = 0;
  double quantized_accuracy = 0;  // NaN when not given
  std::vector<LayerSensitivity> layers;
};

// Checks `j` against qgrad.sensitivity/1. Throws UsageError naming the key path.
SensitivityFile sensitivity_from_json(const nlohmann::json& j);
nlohmann::json sensitivity_to_json(const SensitivityFile& s);

}  // namespace qgrad::cli
