// See host_flag.h.
#include "quant/modules/host_flag.h"

namespace qgrad::quant {

void HostFlag::remember() const {
  storage_ = buffer_.impl()->storage;
  version_ = buffer_.version();
}

bool HostFlag::nonzero(const Tensor& buffer) {
  return buffer.item<double>() != 0;
}

bool HostFlag::get() const {
  if (storage_ != buffer_.impl()->storage || version_ != buffer_.version()) {
    value_ = read_(buffer_);
    remember();
  }
  return value_;
}

void HostFlag::set(bool on) {
  Tensor b = buffer_;
  b.fill_(on ? 1 : 0);
  value_ = on;
  remember();
}

}  // namespace qgrad::quant
