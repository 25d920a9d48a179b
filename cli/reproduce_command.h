// `qgrad reproduce [--models M,...] [--seeds S,...] [--epochs E] [--qat-epochs E] [--cells ...]
// [--quick] [--out DIR] [--data-dir D] [--threads N]`: the paper table in one command. For every
// model and seed it trains the FP32 model, quantizes it post-training (int8, max and entropy
// calibration), fine-tunes it with each QAT recipe from the FP32 weights (as the papers do), and
// writes <out>/results.json (docs/results_format.md), <out>/results.md (mean ± standard
// deviation over the seeds per model, the difference to FP32, the papers' ImageNet numbers for
// reference) and the pictures of `qgrad plot` (accuracy against bit width, training curves).
// Every cell is its own run folder <out>/<model>/seed<S>/<cell>; a finished cell holds cell.json
// (written atomically last), so an interrupted `reproduce` started again skips the finished
// cells and resumes an unfinished training from its last.safetensors. The cells are listed in
// reproduce_cells.h; `--quick` is lenet5bn, seed 0, 2 float epochs and 1 QAT epoch.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "cli/results_file.h"
#include "cli/train_command.h"

namespace qgrad::cli {

struct ReproduceOptions {
  std::vector<std::string> models{"lenet5bn", "vggfm", "resnet20"};
  std::vector<std::int64_t> seeds{0, 1, 2};
  std::int64_t epochs = 15;     // FP32 training
  std::int64_t qat_epochs = 5;  // QAT fine-tuning from the FP32 weights
  std::string cells = "all";    // comma-separated ids of reproduce_cells.h, or "all"
  std::string out = "reproduce";
  std::string dataset = "fashion-mnist";  // or "cifar10" / "cifar100" (binary versions)
  std::string data_dir;      // empty: the train default (Fashion-MNIST only; CIFAR needs one)
  std::int64_t threads = 0;  // 0: every core
  std::int64_t batch_size = 128;
  std::int64_t calibration_batches = 8;  // PTQ
  std::string device = "cpu";            // where every cell trains or calibrates (cuda, cuda:N)
  bool plots = true;
  // Passed to each training cell's run_training: true stops it as Ctrl-C does (tests).
  StopRequest stop_training = nullptr;
};

// Runs (or resumes) every cell, writes the result files and returns what results.json holds.
ResultsFile run_reproduce(const ReproduceOptions& options, std::ostream& out);

// The command line; returns the exit status. Usage errors throw UsageError; Ctrl-C during a
// training cell throws Interrupted (exit status 130) once the cell has saved its checkpoint.
int reproduce_command(const std::vector<std::string>& args, std::ostream& out);
std::string reproduce_usage();

}  // namespace qgrad::cli
