// The kernels of AIMET's MinMaxEncodingAnalyzer, their signatures and per-device register
// functions: merging a batch's min/max statistics into the running ones, and the statistics ->
// encoding range rule (see minmax_encoding_analyzer.h). The statistics live on the input's device,
// so the analyzer reaches these through the "aimet.minmax_merge" and "aimet.minmax_encodings"
// tables instead of reading them on the host.
#pragma once

#include <cstdint>
#include <utility>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace qgrad::aimet {

// (min(run_min, batch_min), max(run_max, batch_max)) element-wise, NaN propagating, computed in
// double and returned in run_min's dtype and shape. All four tensors have one shape.
using MinMaxMergeKernel = std::pair<Tensor, Tensor>(const Tensor& run_min, const Tensor& run_max,
                                                    const Tensor& batch_min,
                                                    const Tensor& batch_max);
inline constexpr KernelTableKey<MinMaxMergeKernel> kMinMaxMergeKernels{
    "aimet.minmax_merge", "aimet.MinMaxEncodingAnalyzer"};

// The encoding range of each (min, max) pair for `num_steps` bins, in min's dtype, into out_min /
// out_max (contiguous, of min's shape and dtype).
using MinMaxEncodingsKernel = void(const Tensor& min, const Tensor& max, std::int64_t num_steps,
                                   bool symmetric, const Tensor& out_min, const Tensor& out_max);
inline constexpr KernelTableKey<MinMaxEncodingsKernel> kMinMaxEncodingsKernels{
    "aimet.minmax_encodings", "aimet.MinMaxEncodingAnalyzer"};

void register_minmax_encoding_cpu_kernels(KernelRegistry& r);
void register_minmax_encoding_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad::aimet
