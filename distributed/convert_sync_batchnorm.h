/// @file
/// convert_sync_batchnorm: turns a model's local batch norm into SyncBatchNorm
/// (torch.nn.SyncBatchNorm.convert_sync_batchnorm), the switch from per-rank statistics to
/// those of the global batch in data-parallel training.
///
/// Every nn::BatchNorm2d below the model (in Sequentials, BasicBlocks, fused QuantConvBn2d
/// layers, ...) is replaced, through Module::replace_module, by a SyncBatchNorm with the same
/// options, the same values of weight, bias and running statistics (and the same
/// requires_grad, gradients, dtype, device and training mode): state_dict() is unchanged. The
/// new layer's tensors are new tensors: convert before creating the optimiser and
/// DistributedDataParallel, which hold the parameters they are given. A layer that is a
/// SyncBatchNorm already is left as it is; BatchNorm1d layers are not converted (SyncBatchNorm
/// is a BatchNorm2d, and export code would take it for one).
///
/// A parent must route its forward through the registered child: a module that keeps its own
/// pointer to a BatchNorm2d must update it in on_replace_child (as Sequential, BasicBlock and
/// QuantConvBn2d do), or it would go on calling the old layer.
#pragma once

#include <cstdint>
#include <memory>

#include "distributed/process_group.h"
#include "nn/module.h"

namespace qgrad::distributed {

/// Replaces every BatchNorm2d below `model` by a SyncBatchNorm over `group` (see the file
/// comment) and returns how many were replaced. Throws ValueError for a null group, or when
/// `model` itself is a BatchNorm2d (it has no parent to be replaced in: construct a
/// SyncBatchNorm instead).
std::int64_t convert_sync_batchnorm(nn::Module& model, std::shared_ptr<ProcessGroup> group);

}  // namespace qgrad::distributed
