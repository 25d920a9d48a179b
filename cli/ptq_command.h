// `qgrad ptq --checkpoint FLOAT.safetensors [--recipe R] [--calibration-batches N] [--method M]
// [--percentile P] [--out DIR_OR_FILE] [--model NAME] [--data-dir D] [--batch-size N]
// [--threads N]`: post-training quantization. It loads a float model (a checkpoint of `qgrad
// train`, or a plain state dict with --model), evaluates it on the test split, quantizes it with
// a QuantRecipe (default: the named recipe nvidia_int8, int8 with max calibration), calibrates
// it on N training batches (quant::calibrate_model: NVIDIA max or histogram calibrators, torch.ao
// observers observing with fake quantization off, then fake quantization on; evaluation freezes
// the observers), evaluates the quantized model and prints both results side by side. It writes
// a checkpoint in `qgrad train`'s format (atomically): the model state with the quantizers'
// state (amax, scale, zero point, observer statistics), a stored config whose "quant" is the
// expanded recipe and whose "pretrained" names the float checkpoint, and a "cli.ptq" metadata
// entry saying how it was calibrated, so `qgrad eval` and `qgrad export` rebuild it without
// calibrating, and `qgrad train` fine-tunes it with "pretrained" (pretrained.h).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "cli/evaluate.h"
#include "cli/float_checkpoint.h"
#include "cli/ptq_recipe.h"
#include "cli/qat_setup.h"

namespace qgrad::cli {

// The checkpoint metadata entry of a PTQ checkpoint: a JSON object with "float_checkpoint",
// "method", "calibration_batches", "calibration_images", "float_test_acc" and "ptq_test_acc".
constexpr const char* kPtqMetadataKey = "cli.ptq";

struct PtqOptions {
  // The float model (checkpoint required; model: the zoo model of a plain state dict, checked
  // against a checkpoint's; data_dir, batch_size (calibration), threads: the float run's when
  // empty / 0).
  FloatModelSource source;
  PtqRecipeOptions recipe;
  // A .safetensors file, or a folder to write <checkpoint stem>_ptq.safetensors into; empty:
  // next to the float checkpoint.
  std::string out;
  // Where the model is evaluated and calibrated: "cpu", "cuda", "cuda:N" (the recipe's
  // quantizers must run there).
  std::string device = "cpu";
};

struct PtqResult {
  EvalResult float_result, quantized;
  QuantizedLayers layers;
  CalibrationReport calibration;
  std::string output;  // the checkpoint written
};

// The whole flow; the report goes to `out`. Bad options are UsageErrors (nothing is read or
// written then); a missing or damaged checkpoint or dataset an IOError; an --out that cannot
// be written an IOError raised before any work is done. Nothing is written unless it succeeds.
// `group`: the ranks that split the calibration batches and the evaluations (null:
// distributed::init_process_group()); rank 0 alone prints and writes the checkpoint.
PtqResult run_ptq(const PtqOptions& options, std::ostream& out,
                  std::shared_ptr<distributed::ProcessGroup> group = nullptr);

// The command line; returns the exit status. Usage errors throw UsageError.
int ptq_command(const std::vector<std::string>& args, std::ostream& out);
std::string ptq_usage();

}  // namespace qgrad::cli
