// `qgrad eval --checkpoint F [--data-dir D] [--batch-size N] [--threads N]`: rebuilds the model
// of a checkpoint written by `qgrad train` (from the config stored in it), loads its weights and
// prints the loss and accuracy on the test split.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "cli/evaluate.h"

namespace qgrad::cli {

struct EvalOptions {
  std::string checkpoint;
  std::string data_dir;         // empty: the data.dir of the training config
  std::int64_t batch_size = 0;  // 0: the eval_batch_size of the training config
  std::int64_t threads = 0;     // 0: every core
};

// Evaluates and prints the result to `out`.
EvalResult run_eval(const EvalOptions& options, std::ostream& out);

// The command line; returns the exit status. Usage errors throw UsageError.
int eval_command(const std::vector<std::string>& args, std::ostream& out);
std::string eval_usage();

}  // namespace qgrad::cli
