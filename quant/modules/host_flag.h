/// @file
/// HostFlag: a quantizer's on/off switch (fake_quant_enabled, observer_enabled) as forward()
/// reads it. The switch is a one-element buffer, so it is checkpointed and moves with the module,
/// but reading a GPU buffer makes the host wait; HostFlag keeps the value the host last read or
/// wrote, tied to the buffer's storage and version counter, and reads the buffer again only
/// after something else wrote it (a load_state_dict, a fill_, a copy_, a rebind, a move to
/// another device). A QAT step on the GPU then reads no flag. An explicit cache, as the design
/// allows.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "core/tensor.h"

namespace qgrad::quant {

/// A cached view of a one-element flag buffer (see the file comment), or of any yes / no fact
/// about a buffer that a reader computes on the host (TensorQuantizer's "has an amax").
class HostFlag {
 public:
  /// Reads the buffer on the host: by default, whether its one element is nonzero.
  using Reader = bool (*)(const Tensor& buffer);
  /// `buffer`: the registered buffer (a handle sharing it, so it sees moves and loads).
  explicit HostFlag(Tensor buffer, Reader read = nonzero)
      : buffer_(std::move(buffer)), read_(read) {}
  /// Whether the flag is on (nonzero); reads the buffer when it changed since the last read.
  bool get() const;
  /// Writes the flag to the buffer and the cache (a one-element flag buffer only).
  void set(bool on);

 private:
  static bool nonzero(const Tensor& buffer);
  void remember() const;
  Tensor buffer_;
  Reader read_;
  // The storage whose value is cached, held so that its address cannot be reused by another.
  mutable std::shared_ptr<Storage> storage_;
  mutable std::uint64_t version_ = 0;
  mutable bool value_ = false;
};

}  // namespace qgrad::quant
