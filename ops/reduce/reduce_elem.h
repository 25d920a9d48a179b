// The element rules of the reductions, written once for both devices: the sum's accumulator type
// (double for floats, wrapping uint64 for integers, as torch's int64 sums), the identity of max
// and min and when a value replaces the running extreme (larger or smaller, or NaN: any NaN makes
// the result NaN), and when an (index, value) pair beats another for argmax/argmin (the first
// extreme, or the first NaN, as torch). reduce_cpu.cpp's loop shapes and reduce_cuda.cu's block
// reductions fold with these rules.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/host_device.h"

namespace qgrad::reduce_elem {

template <typename T>
using sum_acc_t = std::conditional_t<std::is_floating_point_v<T>, double, std::uint64_t>;

template <typename T, bool IsMax>
struct Extreme {
  static QGRAD_HD_INLINE T identity() {
    if constexpr (std::is_floating_point_v<T>) {
      return IsMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    } else {
      return IsMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    }
  }
  // v replaces best: it is larger (smaller), or NaN. (| rather than ||: no short-circuit branch,
  // so the CPU loops stay vectorisable.)
  static QGRAD_HD_INLINE bool takes(T v, T best) {
    return (IsMax ? v > best : v < best) | hd::isnan(v);
  }
  // v at a later index replaces best: strictly better, or the first NaN. Bitwise on purpose (no
  // branches, so the CPU loop vectorises).
  static QGRAD_HD_INLINE bool replaces_later(T v, T best) {
    const bool best_nan = hd::isnan(best), v_nan = hd::isnan(v);
    const bool better = IsMax ? v > best : v < best;
    return (!best_nan) & (better | v_nan);
  }
  // a (at index ia) beats b (at index ib) regardless of order: better, or equal and earlier; a
  // NaN beats any number, and the earlier of two NaNs wins.
  static QGRAD_HD_INLINE bool beats(T a, std::int64_t ia, T b, std::int64_t ib) {
    if (hd::isnan(a) || hd::isnan(b)) return hd::isnan(a) && (!hd::isnan(b) || ia < ib);
    return (IsMax ? a > b : a < b) || (a == b && ia < ib);
  }
};

}  // namespace qgrad::reduce_elem
