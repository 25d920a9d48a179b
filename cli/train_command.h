// `qgrad train`: trains a model as a TrainConfig describes. Each epoch it reports progress,
// evaluates on the test split, appends to <output>/metrics.jsonl, and atomically writes
// <output>/last.safetensors (plus best.safetensors when the test accuracy improves, and
// epoch_<N>.safetensors every output.checkpoint_every epochs). A checkpoint holds the model,
// optimiser, schedule and data-loader state, the partial sums of an unfinished epoch and the
// resolved config, so `"resume": "<checkpoint>"` continues bit-exactly: the same weights as a
// run that was never interrupted. Ctrl-C (or SIGTERM) stops after the current batch and writes
// last.safetensors at that point; a second Ctrl-C ends at once.
//
// A nan/inf training loss (or test loss) stops the run with TrainingDiverged (exit status 1)
// naming the epoch and step, unless the config says "nonfinite_loss": "continue"; either way a
// non-finite epoch never becomes best.safetensors. On start the temporaries that a killed write
// left next to the run's files are removed, and a batch_size larger than the training set is
// reported (the run goes on with one batch per epoch).
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "cli/metrics_log.h"
#include "cli/train_config.h"
#include "core/error.h"
#include "distributed/process_group.h"

namespace qgrad::cli {

// The training loss or test loss became nan or inf with "nonfinite_loss": "stop".
class TrainingDiverged : public ValueError {
 public:
  using ValueError::ValueError;
};

struct TrainOutcome {
  std::string output_dir;
  std::vector<EpochMetrics> epochs;  // every epoch of the run, resumed ones included
  bool interrupted = false;
};

// Asked after every batch with the number of optimiser steps taken so far; true stops the run
// as a Ctrl-C does (checkpoint, then return with interrupted = true).
using StopRequest = std::function<bool(std::int64_t step)>;

// Runs the training; progress and results go to `out`. `group`: the data-parallel ranks to
// train with (null: distributed::init_process_group(), i.e. mpirun's ranks or this process
// alone); rank 0 alone writes to `out` and to disk, and every rank returns once those files
// are complete. TrainOutcome::epochs holds the whole run on rank 0 (a resumed run's earlier
// epochs included, from its metrics.jsonl), this call's epochs on the other ranks.
TrainOutcome run_training(const TrainConfig& config, std::ostream& out,
                          const StopRequest& stop = nullptr,
                          std::shared_ptr<distributed::ProcessGroup> group = nullptr);

// The command line `qgrad train [--config FILE]`; returns the exit status (0 done, 130
// interrupted). Usage errors throw UsageError.
int train_command(const std::vector<std::string>& args, std::ostream& out);
std::string train_usage();

}  // namespace qgrad::cli
