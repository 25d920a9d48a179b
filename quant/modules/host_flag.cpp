// See host_flag.h.
#include "quant/modules/host_flag.h"

namespace qgrad::quant {

void HostFlag::remember() const {
  storage_ = buffer_.impl()->storage;
  version_ = buffer_.version();
}

bool HostFlag::get() const {
  if (storage_ != buffer_.impl()->storage || version_ != buffer_.version()) {
    value_ = buffer_.item<double>() != 0;
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
