/// @file
/// ProcessGroup: the ranks of one data-parallel job and the collectives between them, on
/// tensors (torch.distributed's process group). A back end (MPI; the world of one process)
/// implements the collectives on contiguous host buffers; this class checks the tensors, stages
/// GPU tensors through pinned host memory, and hands each back end the same buffers, so every
/// back end has one behaviour. Every rank must call the same collectives in the same order with
/// tensors of the same shape and dtype (as in MPI); a collective whose tensors differ between
/// ranks is undefined, as there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "distributed/reduce_op.h"

namespace qgrad::distributed {

/// A collective in flight (all_reduce_async): test() moves it on, wait() finishes it.
class Work {
 public:
  virtual ~Work() = default;
  /// Moves the collective on without blocking; true once it is complete.
  virtual bool test() = 0;
  /// Blocks until the collective is complete; the result is then in the tensor.
  virtual void wait() = 0;
};

/// The ranks of a job and their collectives (see the file comment).
class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  /// This process's rank, 0 .. size() - 1.
  int rank() const { return rank_; }
  /// The number of ranks.
  int size() const { return size_; }
  /// The back end: "mpi" or "single".
  virtual std::string backend() const = 0;

  /// Reduces `t` over the ranks in place: every rank ends with the same bits. `t` is a
  /// contiguous float32, float64, int32 or int64 tensor on any device.
  void all_reduce(Tensor& t, ReduceOp op);
  /// all_reduce started without waiting (the gradient buckets of data-parallel training): the
  /// result is in `t` after wait(). `t` must stay alive and untouched until then.
  std::unique_ptr<Work> all_reduce_async(const Tensor& t, ReduceOp op);
  /// Copies `root`'s `t` into every rank's `t` (contiguous, any dtype and device).
  void broadcast(Tensor& t, int root = 0);
  /// Every rank's `t`, in rank order, on every rank (contiguous, any dtype; the results are on
  /// t's device).
  std::vector<Tensor> all_gather(const Tensor& t);
  /// Returns once every rank has called it.
  void barrier();

 protected:
  /// A group in which this process is `rank` of `size`.
  ProcessGroup(int rank, int size);
  /// A back end that reduces GPU memory itself (NCCL) starts the reduction of device tensor `t`
  /// here; null (the default): `t` is staged through host memory and start_all_reduce reduces it.
  virtual std::unique_ptr<Work> start_device_all_reduce(const Tensor& t, ReduceOp op) {
    (void)t;
    (void)op;
    return nullptr;
  }
  /// Starts the reduction of `count` elements of `dtype` at `data` (host memory).
  virtual std::unique_ptr<Work> start_all_reduce(void* data, std::int64_t count, DType dtype,
                                                 ReduceOp op) = 0;
  /// Broadcasts `bytes` bytes at `data` (host memory) from `root`.
  virtual void broadcast_bytes(void* data, std::size_t bytes, int root) = 0;
  /// Gathers `bytes` bytes from every rank's `in` into `out` (size() * bytes, rank order).
  virtual void all_gather_bytes(const void* in, void* out, std::size_t bytes) = 0;
  /// The back end's barrier.
  virtual void barrier_impl() = 0;

 private:
  int rank_;
  int size_;
};

/// `values` reduced with `op` over the ranks of `group` (a few host numbers: an epoch's sums, a
/// flag), the same on every rank; float64, so counts below 2^53 stay exact.
std::vector<double> all_reduce_values(ProcessGroup& group, std::vector<double> values, ReduceOp op);

/// `root`'s `text` on every rank of `group` (a run folder's name, a path).
std::string broadcast_string(ProcessGroup& group, const std::string& text, int root = 0);

}  // namespace qgrad::distributed
