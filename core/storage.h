/// @file
/// Storage: a block of bytes on one device, shared by every tensor view of it, with the version
/// counter that in-place writes bump (so autograd can detect a saved tensor that was modified).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/allocator.h"
#include "core/device.h"

namespace qgrad {

/// A block of bytes on one device, shared by every tensor view of it, with a version counter.
class Storage {
 public:
  /// Allocates `nbytes` on `device` (uninitialised).
  Storage(std::size_t nbytes, Device device);
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  /// The first byte.
  void* data() { return data_.get(); }
  /// The first byte.
  const void* data() const { return data_.get(); }
  /// The size in bytes.
  std::size_t nbytes() const { return nbytes_; }
  /// The device the bytes live on.
  Device device() const { return device_; }

  /// The version counter, bumped by every in-place write.
  std::uint64_t version() const { return version_; }
  /// Bumps the version counter.
  void bump_version() { ++version_; }

 private:
  DataPtr data_;
  std::size_t nbytes_;
  Device device_;
  std::uint64_t version_ = 0;
};

}  // namespace qgrad
