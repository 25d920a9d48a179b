// The histogram kernel of HistogramObserver (torch.histc in float32), its signature and per-device
// register functions. The observer reaches it through the "observer.histc" table, so the batch's
// values are binned where they live instead of being read on the host by the observer.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace qgrad::ao {

// torch.histc of x (floating, any strides; rounded to float32 first) over [lo, hi] in float32:
// `bins` counts, elements outside are ignored, a zero-width range is widened by 1 on each side
// and the last edge belongs to the last bin.
using HistcKernel = std::vector<float>(const Tensor& x, std::int64_t bins, float lo, float hi);
inline constexpr KernelTableKey<HistcKernel> kHistcKernels{"observer.histc", "HistogramObserver"};

void register_histc_cpu_kernels(KernelRegistry& r);
void register_histc_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad::ao
