/// @file
/// synchronize_statistics(): gives a process group to every quantizer of a model that gathers
/// statistics, so that data-parallel training, calibration and PTQ on several ranks leave every
/// rank with the statistics one process would gather from the global batch (each rank's part in
/// rank order). The modules that receive it are those that gather statistics themselves
/// (SyncedStatistics, quant/synced_statistics.h): torch.ao's Observer (the observer child of
/// FakeQuantize and HorizonFakeQuantize, so those are synchronised through it),
/// FusedMovingAvgObsFakeQuantize, LearnableFakeQuantize (its data-driven initialisation; its
/// observer child counts on its own), NVIDIA's TensorQuantizer (its calibrator) and AIMET's
/// quantizers (their encoding analyzer). Learned ranges (LSQ scale and zero point, PACT's alpha,
/// the learnable clip, AIMET's min / max) need nothing here: they stay identical because their
/// gradients are all-reduced with the other parameters (distributed::DistributedDataParallel).
#pragma once

#include <cstddef>
#include <memory>

#include "distributed/process_group.h"
#include "nn/module.h"

namespace qgrad::quant {

/// Sets `group` on every module of `model` (itself included) that gathers statistics and returns
/// how many there are; a null group stops the synchronisation. A group of one rank (or none)
/// changes nothing. Every rank must then run the same batches through the quantizers in the same
/// order, as with any collective.
std::size_t synchronize_statistics(nn::Module& model,
                                   std::shared_ptr<distributed::ProcessGroup> group);

}  // namespace qgrad::quant
