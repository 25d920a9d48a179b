// CPU min/max statistics for observers: the global (min, max) of a float32 tensor and the
// per-channel (min, max) along an axis, in one parallel pass. A NaN anywhere in the data (of a
// channel) makes both results NaN, as torch.aminmax does.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace qgrad::ao {

struct MinMax {
  float min = 0;
  float max = 0;
};

// x: non-empty float32 tensor of any strides.
MinMax aminmax_cpu(const Tensor& x);
// x: non-empty contiguous float32; one (min, max) per index of `axis` (normalised).
std::vector<MinMax> aminmax_per_channel_cpu(const Tensor& x, std::int64_t axis);

}  // namespace qgrad::ao
