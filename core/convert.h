// convert_element<To>(v): the conversion of one element that every dtype-changing copy and fill
// uses. float -> int truncates toward zero like PyTorch's .to(int dtype), but clamps to the
// target's range first and maps NaN to 0 (PyTorch's out-of-range float -> int cast is undefined
// behaviour; on x86 it wraps or gives 0). int -> narrower int wraps modulo 2^bits, as PyTorch;
// everything else is a plain static_cast.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

namespace qgrad {

template <typename To, typename From>
inline To convert_element(From v) {
  if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (std::isnan(v)) return 0;
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

}  // namespace qgrad
