// The NVIDIA calibrators' kernel signatures and per-device register functions: the statistics of
// |x| a HistogramCalibrator needs (its max and zero count, then its histogram) and the running
// max of amax grids (MaxCalibrator, BlockQuantizer::calibrate). calibrator.cpp and block_quant.cpp
// reach them through the "nvidia.abs_stats", "nvidia.abs_histogram" and "nvidia.amax_merge"
// tables, so calibration data is read where it lives.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace qgrad::nvidia {

struct AbsStats {
  double max = 0;          // max |x|
  std::int64_t zeros = 0;  // elements with |x| == 0
  bool nonfinite = false;  // a NaN or +-Inf was seen (max and zeros are then meaningless)
};

// The statistics of |x| in double (x floating, any strides; float32 is widened exactly).
using AbsStatsKernel = AbsStats(const Tensor& x);

// Adds |x| (in double, x floating and finite) to `counts`: bin
// min(counts.size() - 1, floor(|x| / bin_width)), zeros skipped when skip_zeros.
using AbsHistogramKernel = void(const Tensor& x, double bin_width, bool skip_zeros,
                                std::vector<std::int64_t>& counts);

// acc[i] = max(acc[i], a[i]) (std::max) for two contiguous tensors of one shape and dtype.
using AmaxMergeKernel = void(const Tensor& acc, const Tensor& a);

void register_calibrator_cpu_kernels(KernelRegistry& r);
void register_calibrator_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad::nvidia
