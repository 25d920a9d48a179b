// Storage: a block of bytes on one device, shared by every tensor view of it, with the version
// counter that in-place writes bump (so autograd can detect a saved tensor that was modified).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/allocator.h"
#include "core/device.h"

namespace qgrad {

class Storage {
 public:
  Storage(std::size_t nbytes, Device device);
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }
  std::size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  std::uint64_t version() const { return version_; }
  void bump_version() { ++version_; }

 private:
  DataPtr data_;
  std::size_t nbytes_;
  Device device_;
  std::uint64_t version_ = 0;
};

}  // namespace qgrad
