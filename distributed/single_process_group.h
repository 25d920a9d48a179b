/// @file
/// SingleProcessGroup: the world of one process (rank 0 of 1). Every collective leaves its
/// tensors as they are, so code written for N ranks runs unchanged without mpirun (and in a
/// build without MPI).
#pragma once

#include <memory>
#include <string>

#include "distributed/process_group.h"

namespace qgrad::distributed {

/// The world of one process (see the file comment).
class SingleProcessGroup final : public ProcessGroup {
 public:
  SingleProcessGroup() : ProcessGroup(0, 1) {}
  std::string backend() const override { return "single"; }

 protected:
  std::unique_ptr<Work> start_all_reduce(void* data, std::int64_t count, DType dtype,
                                         ReduceOp op) override;
  void broadcast_bytes(void* data, std::size_t bytes, int root) override;
  void all_gather_bytes(const void* in, void* out, std::size_t bytes) override;
  void barrier_impl() override {}
};

}  // namespace qgrad::distributed
