// Helpers of the tests that run on several ranks (see mpi_main.cpp): the job's group, and
// comparisons that give the same answer on every rank.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "distributed/data_parallel.h"
#include "distributed/process_group.h"
#include "nn/module.h"
#include "nn/optim/optimizer.h"
#include "nn/unary_module.h"

namespace qgrad_test {

/// The job's group (joined by mpi_main.cpp).
std::shared_ptr<qgrad::distributed::ProcessGroup> world();

/// True on every rank when `t` holds the same bits on every rank.
bool same_on_all_ranks(const qgrad::Tensor& t);

/// The state_dict entries of `m` (parameters and buffers, quantizer state included) whose bits
/// differ between ranks; the same list on every rank.
std::vector<std::string> differing_state(const qgrad::nn::Module& m);

/// The entries of `a` and `b` (two modules of one architecture, on this rank) whose bits differ.
std::vector<std::string> differing_entries(const qgrad::nn::Module& a, const qgrad::nn::Module& b);

/// One data-parallel optimiser step of `model` (through `ddp`) on this rank's part of the global
/// batch x, y; returns this rank's loss.
qgrad::Tensor ranked_step(qgrad::nn::UnaryModule& model,
                          qgrad::distributed::DistributedDataParallel& ddp,
                          qgrad::optim::Optimizer& optimizer, const qgrad::Tensor& x,
                          const qgrad::Tensor& y);

/// One SGD step of `ranked` (data-parallel through `ddp`, on this rank's part of the global
/// batch x, y) and one of `whole` (this process alone, on all of it); returns |the ranks' mean
/// loss - whole's loss|, the same on every rank.
double step_both(qgrad::nn::UnaryModule& ranked, qgrad::distributed::DistributedDataParallel& ddp,
                 qgrad::optim::Optimizer& ranked_optimizer, qgrad::nn::UnaryModule& whole,
                 qgrad::optim::Optimizer& whole_optimizer, const qgrad::Tensor& x,
                 const qgrad::Tensor& y);

/// `t`'s rows [rank x rows, (rank + 1) x rows) of dim 0: this rank's part of a global batch.
qgrad::Tensor rank_part(const qgrad::Tensor& t);

}  // namespace qgrad_test
