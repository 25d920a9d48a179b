// CPU kernels of the NVIDIA calibrators, loops over calibrator_elem.h's elements: |x| statistics
// in double, the histogram of float32 |x| binned as torch.histc bins it (counted per thread and
// merged, which is exact for integer counts) and the element-wise running max of amax grids,
// registered in the "nvidia.*" tables.
#include "quant/nvidia/calibrator_kernels.h"

#include "core/error.h"
#include "core/strided_loop.h"
#include "quant/nvidia/calibrator_elem.h"

namespace qgrad::nvidia {

namespace {

// x as contiguous float64 (the precision of the calibrators' statistics).
Tensor as_float64(const Tensor& x) {
  return (x.dtype() == kFloat64 ? x : x.to(kFloat64)).contiguous();
}

AbsStats abs_stats_cpu(const Tensor& x) {
  const Tensor xd = as_float64(x);
  const double* p = xd.data_ptr<double>();
  const std::int64_t n = xd.numel();
  AbsStats s;
  for (std::int64_t i = 0; i < n; ++i) {
    if (!add_abs_stat(s, p[i])) return s;
  }
  return s;
}

void abs_histogram_cpu(const Tensor& x, float range_max, bool skip_zeros,
                       std::vector<std::int64_t>& counts) {
  QGRAD_CHECK(x.dtype() == kFloat32 && x.is_contiguous(), ValueError,
              "abs_histogram_cpu: input must be contiguous float32 (the reference's x.float())");
  const float* p = x.data_ptr<float>();
  const std::int64_t n = x.numel();
  const auto nbins = static_cast<std::int64_t>(counts.size());
  const AbsHistcBinElem bin{range_max, nbins, skip_zeros};
  parallel_for(n, kParallelGrain, [&](std::int64_t b, std::int64_t e) {
    std::vector<std::int64_t> local(static_cast<std::size_t>(nbins), 0);
    for (std::int64_t i = b; i < e; ++i) {
      const std::int64_t idx = bin(p[i]);
      if (idx >= 0) ++local[static_cast<std::size_t>(idx)];
    }
#pragma omp critical(qgrad_nvidia_histogram)
    for (std::int64_t k = 0; k < nbins; ++k) counts[static_cast<std::size_t>(k)] += local[k];
  });
}

void amax_merge_cpu(const Tensor& acc, const Tensor& a) {
  QGRAD_DISPATCH_FLOAT(acc.dtype(), "amax_merge_cpu", [&] {
    scalar_t* pm = acc.data_ptr<scalar_t>();
    const scalar_t* pa = a.data_ptr<scalar_t>();
    for (std::int64_t i = 0; i < acc.numel(); ++i) pm[i] = amax_merge(pm[i], pa[i]);
  });
}

}  // namespace

void register_calibrator_cpu_kernels(KernelRegistry& r) {
  r.table(kAbsStatsKernels).define(DeviceType::CPU, &abs_stats_cpu, kFloatingDTypes);
  r.table(kAbsHistogramKernels).define(DeviceType::CPU, &abs_histogram_cpu, kFloatingDTypes);
  r.table(kAmaxMergeKernels).define(DeviceType::CPU, &amax_merge_cpu, kFloatingDTypes);
}

}  // namespace qgrad::nvidia
