/// @file
/// Training checkpoints in one safetensors file: the model's state dict, the optimiser's and LR
/// scheduler's state, any extra tensors (e.g. data-loader position), the epoch/step counters and
/// user metadata. Tensors are stored under prefixed names ("model.fc.weight", "optim.state.0.
/// exp_avg", "sched.last_epoch", "extra.loader.epoch"); the header's __metadata__ holds
/// "qgrad.format" = "checkpoint", "qgrad.version" = "1", "qgrad.epoch", "qgrad.step" and the
/// user's own string entries. Saving is atomic; loading validates the file (IOError) and, in the
/// convenience overload, restores a model/optimiser/scheduler in place.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "nn/ordered_dict.h"

namespace qgrad::nn {
class Module;
}
namespace qgrad::optim {
class Optimizer;
class LRScheduler;
}  // namespace qgrad::optim

namespace qgrad::serialize {

/// What a checkpoint file holds: the model, optimiser and scheduler states, extras, progress and
/// metadata.
struct Checkpoint {
  TensorDict model;        ///< the model's state_dict
  TensorDict optimizer;    ///< the optimiser's state_dict
  TensorDict scheduler;    ///< the scheduler's state_dict
  TensorDict extra;        ///< other tensors the caller saves
  std::int64_t epoch = 0;  ///< the epoch reached
  std::int64_t step = 0;   ///< the training step reached
  /// User entries; keys starting with "qgrad." are reserved.
  std::map<std::string, std::string> metadata;
};

/// Writes `checkpoint` to `path` as a safetensors file; throws ValueError for a negative epoch or
/// step or a reserved metadata key.
void save_checkpoint(const std::string& path, const Checkpoint& checkpoint);
/// Throws IOError naming the file for a missing file, a directory, or a file that is not a valid
/// qgrad checkpoint (any safetensors error, missing or malformed qgrad.* metadata, a tensor
/// outside the sections, a tensor checksum that does not match).
Checkpoint load_checkpoint(const std::string& path);
/// The same from the bytes of a checkpoint file; `source` names it in errors.
Checkpoint parse_checkpoint(const std::string& bytes, const std::string& source);

/// Saves model.state_dict() and, when given, the optimiser and scheduler state.
void save_checkpoint(const std::string& path, const nn::Module& model,
                     const optim::Optimizer* optimizer, const optim::LRScheduler* scheduler,
                     std::int64_t epoch, std::int64_t step,
                     const std::map<std::string, std::string>& metadata = {},
                     const TensorDict& extra = {});
/// Loads the file and restores the model (strictly), the optimiser and the scheduler (when
/// given; the file must then contain their state). Returns the whole checkpoint for the epoch,
/// step, metadata and extra tensors. A state that does not fit throws the restoring function's
/// error type with "load_checkpoint: '<path>': " in front of its message.
Checkpoint load_checkpoint(const std::string& path, nn::Module& model, optim::Optimizer* optimizer,
                           optim::LRScheduler* scheduler);

}  // namespace qgrad::serialize
