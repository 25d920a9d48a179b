// The dropout family's keep rule, shared by the CPU and CUDA kernels so that both draw the same
// mask: element i uses word i % 4 of Philox block (first_block + i / 4), and is kept when the
// word's top 24 bits, as a uniform u in [0, 1), satisfy u >= p (an integer compare against
// ceil(p * 2^24)).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"

namespace qgrad::dropout_elem {

// ceil(p * 2^24): the smallest kept 24-bit draw (host only: computed once per call).
inline std::uint32_t threshold(double p) {
  return static_cast<std::uint32_t>(std::ceil(p * 16777216.0));
}

QGRAD_HD_INLINE bool keeps(std::uint32_t word, std::uint32_t threshold) {
  return (word >> 8) >= threshold;
}

// The factor kept elements are multiplied by, 1 / (1 - p) (0 when everything is dropped).
template <typename T>
T scale(double p) {
  return p < 1.0 ? static_cast<T>(1.0 / (1.0 - p)) : T(0);
}

}  // namespace qgrad::dropout_elem
