/// @file
/// DistributedDataParallel: data-parallel training of one module on every rank of a
/// ProcessGroup (torch's DistributedDataParallel, its Reducer). At construction the
/// parameters and buffers are broadcast from rank 0 and the gradients are laid out in buckets,
/// in reverse registration order (roughly the order backward produces them). During backward a
/// hook on each parameter copies its gradient into its bucket as soon as it is accumulated, and
/// a full bucket starts its all-reduce at once, while backward goes on with the layers below
/// (buckets start in index order on every rank, so the collectives match). synchronize(), after
/// backward and before the optimiser's step, starts what is left, waits, and writes the average
/// over the ranks into every .grad(); then the buffers are broadcast from rank 0 (batch norm's
/// running statistics, as torch's broadcast_buffers), so that every rank holds the same bits.
///
/// Exactness: the averaged gradients are the same bits on every rank (one all-reduce result).
/// Against one process with the whole global batch they agree within float rounding only: the
/// global batch's mean loss is summed in another order. A parameter that got no gradient on any
/// rank keeps an undefined .grad(), as it would in one process; one that got a gradient on some
/// ranks gets the average with zeros for the others.
///
/// Construct it after the module is on its device and quantized (those replace tensors that
/// the hooks and buckets refer to); parameters created later (lazily, at a first forward) are
/// found by synchronize(), which then lays out the buckets again.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "distributed/process_group.h"
#include "nn/module.h"

namespace qgrad::distributed {

/// Options of DistributedDataParallel.
struct DataParallelOptions {
  /// The size of a gradient bucket in MiB: smaller buckets start their all-reduce earlier in
  /// backward (more overlap) at the cost of more collectives.
  double bucket_cap_mb = 1.0;
  /// Broadcast the buffers from rank 0 after every synchronize() (batch norm's running
  /// statistics with local batch norm); off: each rank keeps its own.
  bool broadcast_buffers = true;
};

/// What synchronize() cost so far (the benchmark's share of step time spent waiting).
struct DataParallelStats {
  std::int64_t steps = 0;          ///< synchronize() calls that reduced gradients
  std::int64_t all_reduces = 0;    ///< bucket all-reduces started
  std::int64_t started_early = 0;  ///< of those, started by a hook while backward ran
  double wait_s = 0;               ///< seconds synchronize() spent waiting for them
  double broadcast_s = 0;          ///< seconds spent broadcasting buffers
};

/// Data-parallel training of one module (see the file comment).
class DistributedDataParallel {
 public:
  /// Broadcasts `module`'s parameters and buffers from rank 0 and hooks its parameters.
  DistributedDataParallel(std::shared_ptr<nn::Module> module, std::shared_ptr<ProcessGroup> group,
                          DataParallelOptions options = {});
  /// Removes the hooks (an all-reduce still in flight is finished first).
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  /// The wrapped module.
  nn::Module& module() const { return *module_; }
  /// The group.
  ProcessGroup& group() const { return *group_; }

  /// Finishes the gradient all-reduce of this step (see the file comment). Every rank must
  /// call it once per optimiser step, after backward.
  void synchronize();
  /// Turns the reduction off (torch's no_sync, for gradient accumulation: backward passes
  /// accumulate locally and synchronize() does nothing) or back on.
  void set_sync(bool on) { sync_ = on; }

  /// What the reductions cost so far.
  const DataParallelStats& stats() const { return stats_; }
  /// The number of gradient buckets.
  std::size_t bucket_count() const { return buckets_.size(); }

 private:
  struct Entry {
    Tensor param;
    std::size_t bucket = 0;
    std::int64_t offset = 0;  // in the bucket's flat buffer
    std::int64_t flag = 0;    // its place among the bucket's flags (after the gradients)
    bool arrived = false;     // its gradient is in the bucket this step
    std::uint64_t hook = 0;
  };
  struct Bucket {
    std::vector<std::size_t> entries;
    std::int64_t numel = 0;  // gradient elements; the flags of the entries follow them
    Tensor flat;             // [numel + entries], on the parameters' device and dtype
    std::size_t pending = 0;
    std::unique_ptr<Work> work;
  };
  void build_buckets();
  void remove_hooks();
  void on_gradient(std::size_t entry);
  void stage(std::size_t entry);
  void launch_ready(bool from_hook);
  void broadcast_state(bool parameters);
  std::vector<Tensor> current_parameters() const;

  std::shared_ptr<nn::Module> module_;
  std::shared_ptr<ProcessGroup> group_;
  DataParallelOptions options_;
  std::vector<Entry> entries_;
  std::vector<Bucket> buckets_;
  std::size_t next_launch_ = 0;  // the first bucket not started this step
  bool sync_ = true;
  DataParallelStats stats_;
};

}  // namespace qgrad::distributed
