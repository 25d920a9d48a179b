// `qgrad autoquant --checkpoint FLOAT --budget "avg_weight_bits<=4" [--bits 8,4,2] [--recipe R]
// [--method M] [--calibration-batches N] [--images N] [--out DIR] [--model NAME]
// [--data-dir D] [--batch-size N] [--threads N]`: mixed-precision weights. For every layer the
// recipe quantizes and every candidate width it measures the accuracy lost with only that
// layer's weights quantized (post-training calibrated, layer inputs float; SensitivityBench),
// chooses per-layer widths within the budget with the greedy search of bit_allocation.h,
// writes the result as a recipe with per-layer rules (DIR/autoquant_recipe.json, usable by
// `qgrad train` and `qgrad ptq`), and reports its accuracy and weight size (with the recipe's
// layer inputs quantized) against the widest uniform width that fits the same budget. Recipes
// whose weights have a bit-width key: nvidia and lsq ("num_bits"), aimet ("bitwidth").
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/bit_allocation.h"
#include "cli/float_checkpoint.h"
#include "cli/ptq_recipe.h"

namespace qgrad::cli {

struct AutoquantOptions {
  FloatModelSource source;  // the float checkpoint (required) and overrides
  std::string budget;
  std::vector<int> bits{8, 4, 2};
  PtqRecipeOptions recipe;
  std::int64_t images = 2000;
  std::string out = ".";
  std::string device = "cpu";  // where the models are calibrated and measured
};

struct AutoquantResult {
  std::vector<LayerCosts> layers;  // the layers autoquant allocates widths to
  // Layers whose weight quantizer a "layers" rule of --recipe sets: they keep the rule's
  // quantizer, are not measured or allocated, and the budget does not count them.
  std::vector<std::string> fixed_layers;
  BitAllocation allocation;
  double float_accuracy = 0;
  double mixed_accuracy = 0;
  int uniform_bits = 0;         // 0: no uniform width fits the budget
  double uniform_accuracy = 0;  // NaN without a uniform width
  std::int64_t uniform_weight_bits = 0;
  nlohmann::json recipe;  // the mixed-precision recipe written
  std::string recipe_path;
};

AutoquantResult run_autoquant(const AutoquantOptions& options, std::ostream& out);

int autoquant_command(const std::vector<std::string>& args, std::ostream& out);
std::string autoquant_usage();

}  // namespace qgrad::cli
