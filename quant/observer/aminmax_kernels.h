// The min/max statistics kernels of the observers, their signatures and per-device register
// functions: the global (min, max) of a tensor and the per-channel (min, max) along an axis, at
// float32 precision (a float64 input is rounded to float32 first, as the observers' float32
// running statistics are). A NaN anywhere in the data (of a channel) makes both results NaN, as
// torch.aminmax does. The observers reach them through the "observer.aminmax" and
// "observer.aminmax_per_channel" tables.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace qgrad::ao {

struct MinMax {
  float min = 0;
  float max = 0;
};

// x: non-empty floating tensor of any strides.
using AminmaxKernel = MinMax(const Tensor& x);
inline constexpr KernelTableKey<AminmaxKernel> kAminmaxKernels{"observer.aminmax",
                                                               "HistogramObserver"};
// x: non-empty floating tensor of any strides; one (min, max) per index of `axis` (normalised).
using AminmaxPerChannelKernel = std::vector<MinMax>(const Tensor& x, std::int64_t axis);
inline constexpr KernelTableKey<AminmaxPerChannelKernel> kAminmaxPerChannelKernels{
    "observer.aminmax_per_channel", ""};

// The same into float32 tensors on x's device, so that a GPU's statistics never reach the host:
// min and max (contiguous) hold one value (axis -1) or one per index of `axis` (normalised). x:
// non-empty float32 (the observers convert other dtypes first), any strides. The min/max
// observers reach it, the two kernels above, on the CPU (their catalogue entries are this
// table's).
using AminmaxIntoKernel = void(const Tensor& x, std::int64_t axis, const Tensor& min,
                               const Tensor& max);
inline constexpr KernelTableKey<AminmaxIntoKernel> kAminmaxIntoKernels{
    "observer.aminmax_into",
    "MinMaxObserver MovingAverageMinMaxObserver PerChannelMinMaxObserver "
    "MovingAveragePerChannelMinMaxObserver"};

void register_aminmax_cpu_kernels(KernelRegistry& r);
void register_aminmax_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad::ao
