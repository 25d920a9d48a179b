// `qgrad eval --checkpoint F [--data-dir D] [--batch-size N] [--threads N] [--int8]`: rebuilds
// the model of a checkpoint written by `qgrad train` (from the config stored in it), loads its
// weights and prints the loss and accuracy on the test split. With --int8 (a quantization-aware
// checkpoint only) it also converts the model to int8 (quant::convert) and prints the
// fake-quantized and int8 accuracy and images/s side by side, their top-1 agreement and largest
// logit difference, and the oneDNN implementation of every int8 layer. With --quantizers Q.json
// (a quantization-aware checkpoint only) the quantizers take the state of a file written by
// `qgrad export --quantizers` (quant/modules/quantizer_state_file.h) after the checkpoint's.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "cli/evaluate.h"
#include "cli/int8_eval.h"

namespace qgrad::cli {

struct EvalOptions {
  std::string checkpoint;
  std::string data_dir;         // empty: the data.dir of the training config
  std::int64_t batch_size = 0;  // 0: the eval_batch_size of the training config
  std::int64_t threads = 0;     // 0: every core
  bool int8 = false;            // --int8: compare with the int8 conversion (run_eval_int8)
  std::string quantizers;       // --quantizers Q.json: quantizer state applied after the checkpoint
  std::string device = "cpu";   // --device: where the (fake-quantized) model is evaluated
  // A float checkpoint on the CPU runs compiled (deploy::compile_inference: batch norm folded,
  // activations fused) unless false (--no-fuse: the module's forward) or the model has a layer
  // the compiler does not map (then the module's forward, with a note).
  bool fuse = true;
};

// Evaluates and prints the result to `out`.
EvalResult run_eval(const EvalOptions& options, std::ostream& out);
// The --int8 evaluation, printed to `out`. A checkpoint without a quant recipe is a UsageError;
// a model int8 cannot express is a ValueError naming the layer.
Int8Comparison run_eval_int8(const EvalOptions& options, std::ostream& out);

// The command line; returns the exit status. Usage errors throw UsageError.
int eval_command(const std::vector<std::string>& args, std::ostream& out);
std::string eval_usage();

}  // namespace qgrad::cli
