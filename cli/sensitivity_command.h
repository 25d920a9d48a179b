// `qgrad sensitivity --checkpoint FLOAT [--recipe R] [--method M] [--calibration-batches N]
// [--images N] [--out DIR] [--model NAME] [--data-dir D] [--batch-size N] [--threads N]
// [--no-plot]`: per-layer sensitivity of a float model to a quantization recipe. For each layer
// the recipe quantizes, the test accuracy with only that layer quantized (post-training
// calibrated as `qgrad ptq` does) and the SQNR in dB of each of its quantizers, on the first N
// test images; plus the float accuracy and the accuracy with every layer quantized. Prints a
// table, writes DIR/sensitivity.json (qgrad.sensitivity/1, docs/results_format.md; atomically)
// and DIR/sensitivity.png through `qgrad plot` (skipped with a note when matplotlib is missing).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "cli/float_checkpoint.h"
#include "cli/ptq_recipe.h"
#include "cli/sensitivity_file.h"

namespace qgrad::cli {

struct SensitivityOptions {
  FloatModelSource source;  // the float checkpoint (required) and overrides
  PtqRecipeOptions recipe;
  std::int64_t images = 2000;  // the test subset: its first images
  std::string out = ".";
  bool plot = true;
  std::string device = "cpu";  // where the models are calibrated and measured
};

SensitivityFile run_sensitivity(const SensitivityOptions& options, std::ostream& out);

int sensitivity_command(const std::vector<std::string>& args, std::ostream& out);
std::string sensitivity_usage();

}  // namespace qgrad::cli
