/// @file
/// HostStaging: the host copy of a GPU tensor that a collective works on (MPI reads and writes
/// host memory). Pinned memory, so the copies run at the link's speed; on the CPU the tensor's
/// own memory is used and nothing is copied.
#pragma once

#include <cstddef>
#include <memory>

#include "core/tensor.h"

namespace qgrad::distributed {

/// The host buffer a collective reads and writes for one contiguous tensor (see the file
/// comment).
class HostStaging {
 public:
  /// Stages `t` (contiguous); with `copy_in`, its values are copied to the host first.
  HostStaging(const Tensor& t, bool copy_in);
  ~HostStaging();
  HostStaging(HostStaging&&) noexcept;
  HostStaging& operator=(HostStaging&&) noexcept;

  /// The host memory of the tensor's bytes.
  void* data() const { return data_; }
  /// The tensor's size in bytes.
  std::size_t bytes() const { return bytes_; }
  /// Copies the host buffer back into the tensor (no-op on the CPU).
  void copy_back() const;

 private:
  struct Pinned;  // the pinned buffer of a GPU tensor
  Tensor tensor_;
  std::unique_ptr<Pinned> pinned_;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace qgrad::distributed
