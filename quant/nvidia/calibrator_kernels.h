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
#include "quant/nvidia/calibrator_elem.h"  // AbsStats

namespace qgrad::nvidia {

// The statistics of |x| in double (x floating, any strides; float32 is widened exactly).
using AbsStatsKernel = AbsStats(const Tensor& x);
inline constexpr KernelTableKey<AbsStatsKernel> kAbsStatsKernels{"nvidia.abs_stats",
                                                                 "HistogramCalibrator"};

// Adds |x| (x contiguous float32) to `counts` as torch.histc(|x|, bins=counts.size(), min=0,
// max=range_max) bins it (torch_histc_bin in calibrator_elem.h); values outside [0, range_max]
// are dropped as histc drops them; zeros skipped when skip_zeros.
using AbsHistogramKernel = void(const Tensor& x, float range_max, bool skip_zeros,
                                std::vector<std::int64_t>& counts);
inline constexpr KernelTableKey<AbsHistogramKernel> kAbsHistogramKernels{"nvidia.abs_histogram",
                                                                         "HistogramCalibrator"};

// acc[i] = max(acc[i], a[i]) (std::max's rule, amax_merge) for two contiguous tensors of one shape
// and dtype.
using AmaxMergeKernel = void(const Tensor& acc, const Tensor& a);
inline constexpr KernelTableKey<AmaxMergeKernel> kAmaxMergeKernels{
    "nvidia.amax_merge", "block_fake_quant block_effective_amax BlockQuantizer MaxCalibrator"};

void register_calibrator_cpu_kernels(KernelRegistry& r);
void register_calibrator_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad::nvidia
