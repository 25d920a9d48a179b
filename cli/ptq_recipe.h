// The QuantRecipe of `qgrad ptq`: the --recipe argument (a named recipe such as "nvidia_int8",
// a JSON file, or inline JSON text starting with '{'), with --method / --percentile /
// --calibration-batches applied over it. For post-training quantization the calibration is the
// whole job, so the recipe always calibrates: with the given batch count, else the recipe's own,
// else 8 batches (torch_ao and LSQ recipes default to none, as their observers and step sizes
// learn during QAT). --method picks how NVIDIA recipes calibrate their layer inputs: "max" sets
// the input quantizers' calib_method to "max"; "entropy", "mse" and "percentile" set it to
// "histogram" with calibration.method (pytorch_quantization's histogram calibrators). Weights
// keep the recipe's calibrator (per-channel max in every named NVIDIA recipe, as
// pytorch_quantization calibrates weights). Other families calibrate with what their recipe
// says (torch.ao: the observer of each quantizer), so --method is a usage error there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "quant/modules/quant_recipe.h"

namespace qgrad::cli {

// Calibration batches when neither the option nor the recipe gives a number.
constexpr std::int64_t kDefaultPtqCalibrationBatches = 8;

struct PtqRecipeOptions {
  // The command-line options that set these fields: --recipe, --method, --percentile,
  // --calibration-batches.
  static const std::vector<std::string>& option_names();
  // Sets the field of option `name` (false for another name); UsageError for a bad number.
  bool take_option(const std::string& name, const std::string& value);

  std::string command = "ptq";           // how errors start ("ptq: --recipe ...")
  std::string recipe = "nvidia_int8";    // name, JSON file or inline JSON
  std::string method;                    // empty: the recipe's
  std::optional<double> percentile;      // --method percentile only
  std::int64_t calibration_batches = 0;  // 0: the recipe's, else kDefaultPtqCalibrationBatches
};

// The recipe, validated. UsageError "ptq: --recipe ..." (or --method, --percentile) naming the
// problem: unknown names, invalid JSON, a bad recipe key, a method the recipe's family does not
// calibrate with, a recipe that quantizes nothing. IOError for a recipe file that cannot be read.
quant::QuantRecipe ptq_recipe(const PtqRecipeOptions& options);

// How the recipe calibrates, for the report: "max (inputs), max (weights)", "percentile 99.9
// histogram (inputs), max (weights)", "moving_average_minmax observer (inputs), ...".
std::string describe_calibration(const quant::QuantRecipe& recipe);

}  // namespace qgrad::cli
