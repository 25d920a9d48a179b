/// @file
/// NcclCommunicator: the NCCL communicator of one rank on one GPU, for the MPI process group's
/// GPU path (builds with QGRAD_WITH_NCCL; the definitions are in nccl_communicator_nccl.cpp).
/// MPI starts the ranks and broadcasts NCCL's unique id; NCCL then sums device buffers between
/// the GPUs directly, on qgrad's stream of the device (core/cuda_stream.h), so later kernels on
/// that stream see the result without the host waiting. One rank per GPU: NCCL refuses two
/// ranks on one device (the host-staged path serves that case).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/dtype.h"

namespace qgrad::distributed {

/// One rank's NCCL communicator on one GPU (see the file comment).
class NcclCommunicator {
 public:
  /// A new unique id (rank 0 makes it; the others receive its bytes).
  static std::vector<char> make_unique_id();
  /// Joins the communicator of `size` ranks named by `unique_id` as `rank`, on CUDA device
  /// `device` (collective: every rank calls it). Throws Error naming NCCL's message.
  NcclCommunicator(const std::vector<char>& unique_id, int rank, int size, int device);
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  /// The device the communicator works on.
  int device() const { return device_; }
  /// Sums `count` elements of `dtype` at device address `data` over the ranks, in place, queued
  /// on the device's stream (float32, float64, int32, int64).
  void all_reduce_sum(void* data, std::int64_t count, DType dtype);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int device_;
};

}  // namespace qgrad::distributed
