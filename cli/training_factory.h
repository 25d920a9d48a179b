// The objects a TrainConfig describes: the model (from the model zoo), the data transforms, the
// optimiser and the learning-rate schedule. Shared by `qgrad train` and `qgrad eval` so both
// build exactly the same things from the same config, and the thread settings of a run.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cli/train_config.h"
#include "nn/data/transforms.h"
#include "nn/optim/lr_scheduler.h"
#include "nn/optim/optimizer.h"
#include "nn/unary_module.h"

namespace qgrad::cli {

// The OpenMP threads a run computes with: "threads", or one per core (under mpirun, the cores
// divided among the ranks on this machine).
int compute_threads(const TrainConfig& config);
// Makes compute_threads(config) OpenMP's thread count and returns it. More threads than cores are
// started once first: libgomp aborts the process ("Thread creation failed") when a memory or
// process limit stops a team, so that is a UsageError naming "threads" here instead.
int use_compute_threads(const TrainConfig& config);
// Whether data loaders prepare batches on background threads: "data.prefetch", or, when unset,
// whether "data.workers" > 1 or a core is left over beyond compute_threads().
bool background_loading(const TrainConfig& config);

// The model `config.model` for the data's input shape and class count (data_shape), initialised
// from `config.seed`, on the CPU; or the model imported from `config.onnx` (onnx_model.h).
std::shared_ptr<nn::UnaryModule> build_model(const TrainConfig& config);

// Training transforms: augmentation (image_folder: RandomResizedCrop to data.image_size, or its
// evaluation geometry; then random crop to `image_height` x `image_width` after zero padding,
// horizontal flip) on the [0, 1] image, then normalisation.
std::vector<std::shared_ptr<const data::Transform>> build_train_transforms(
    const TrainConfig& config, std::int64_t image_height, std::int64_t image_width);
// Test transforms: normalisation (image_folder: Resize to data.resize and CenterCrop to
// data.image_size first).
std::vector<std::shared_ptr<const data::Transform>> build_eval_transforms(
    const TrainConfig& config);

std::unique_ptr<optim::Optimizer> build_optimizer(const TrainConfig& config,
                                                  const std::vector<Tensor>& parameters);

// The schedule, stepped once per batch (`batches_per_epoch` converts epochs to steps). Null for
// a constant learning rate without warm-up. With warm-up, a LinearWarmup runs first and the
// main schedule starts after it (SequentialLR); multistep milestones still count from the start
// of training, step decays and the cosine period count from the end of the warm-up.
std::unique_ptr<optim::LRScheduler> build_scheduler(const TrainConfig& config,
                                                    optim::Optimizer& optimizer,
                                                    std::int64_t batches_per_epoch);

}  // namespace qgrad::cli
