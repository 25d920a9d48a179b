// convert_element<To>(v): the conversion of one element that every dtype-changing copy and fill
// uses. float -> int truncates toward zero like PyTorch's .to(int dtype), but clamps to the
// target's range first and maps NaN to 0 (PyTorch's out-of-range float -> int cast is undefined
// behaviour; on x86 it wraps or gives 0). int -> narrower int wraps modulo 2^bits, as PyTorch;
// everything else is a plain static_cast. Host/device: the CUDA copies convert with it too.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "core/host_device.h"

namespace qgrad {

template <typename To, typename From>
QGRAD_HD_INLINE To convert_element(From v) {
  if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (hd::isnan(v)) return 0;
    // The ranges of all integer dtypes are exact in double.
    const double lo = static_cast<double>(std::numeric_limits<To>::lowest());
    const double hi = static_cast<double>(std::numeric_limits<To>::max());
    const double d = static_cast<double>(v);
    if (d <= lo) return std::numeric_limits<To>::lowest();
    if (d >= hi) return std::numeric_limits<To>::max();
    return static_cast<To>(d);
  } else {
    return static_cast<To>(v);
  }
}

// convert_element as a functor, for the element-wise drivers (cpu::map, cuda::map).
template <typename To, typename From>
struct ConvertElement {
  QGRAD_HD To operator()(From v) const { return convert_element<To>(v); }
};
// A constant, for fills through the element-wise drivers.
template <typename T>
struct ConstantElement {
  T value;
  QGRAD_HD T operator()() const { return value; }
};

}  // namespace qgrad
