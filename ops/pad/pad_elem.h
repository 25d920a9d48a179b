// The pad family's index rule, shared by the CPU and CUDA kernels: which input index along one
// dim an output index copies from, for every pad mode (QGRAD_HD, so both devices map the same).
#pragma once

#include <cstdint>

#include "core/host_device.h"
#include "ops/pad/pad_kernels.h"

namespace qgrad::pad_elem {

// Source index of output index `o` along a dim of input size `n` padded by `left` and `right`
// (negative: cropped), or -1 when it falls in a constant border.
QGRAD_HD_INLINE std::int64_t source_index(PadMode mode, std::int64_t n, std::int64_t left,
                                          std::int64_t right, std::int64_t o) {
  const std::int64_t i = o - left;
  switch (mode) {
    case PadMode::Constant:
      return (i >= 0 && i < n) ? i : -1;
    case PadMode::Reflect:
      if (i < 0) return -i;
      if (i >= n) return 2 * (n - 1) - i;
      return i;
    case PadMode::Replicate:
      return i < 0 ? 0 : (i > n - 1 ? n - 1 : i);
    case PadMode::Circular: {
      // Crop first (negative pads), then wrap around the cropped range [a, b).
      const std::int64_t a = left < 0 ? -left : 0;
      const std::int64_t b = n - (right < 0 ? -right : 0);
      const std::int64_t m = b - a;
      const std::int64_t k = (o - (left > 0 ? left : 0)) % m;
      return a + (k < 0 ? k + m : k);
    }
  }
  return -1;
}

}  // namespace qgrad::pad_elem
