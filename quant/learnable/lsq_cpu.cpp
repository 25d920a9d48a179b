// CPU kernels of LSQ / LSQ+: lsq_kernel.h's device-generic passes through cpu::map (the step
// size and offset read through zero strides when broadcast), the initialisation statistics, and
// the "learnable.lsq_*" table registration.
#include "quant/learnable/lsq_kernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/cpu_map.h"
#include "core/dtype.h"
#include "quant/learnable/lsq_kernel.h"

namespace qgrad::learnable {

namespace {

void lsq_forward_cpu(const Tensor& x, const Tensor& s, const Tensor& beta, double lo, double hi,
                     const Tensor& y) {
  lsq_forward<cpu::Map>(x, s, beta, lo, hi, y);
}

void lsq_backward_cpu(const Tensor& dy, const Tensor& x, const Tensor& s, const Tensor& beta,
                      double lo, double hi, double grad_scale, const Tensor& dx, const Tensor& ds,
                      const Tensor& dbeta) {
  lsq_backward<cpu::Map>(dy, x, s, beta, lo, hi, grad_scale, dx, ds, dbeta);
}

double lsq_abs_sum_cpu(const Tensor& v) {
  double sum = 0;
  for (double e : v.to_vector<double>()) sum += std::fabs(e);
  return sum;
}

std::pair<double, double> lsq_minmax_cpu(const Tensor& x) {
  const std::vector<double> v = x.to_vector<double>();
  double lo = v[0], hi = v[0];
  for (double e : v) {
    lo = std::min(lo, e);
    hi = std::max(hi, e);
  }
  return {lo, hi};
}

}  // namespace

void register_lsq_cpu_kernels(KernelRegistry& r) {
  r.table(kLsqForwardKernels).define(DeviceType::CPU, &lsq_forward_cpu, kFloatingDTypes);
  r.table(kLsqBackwardKernels).define(DeviceType::CPU, &lsq_backward_cpu, kFloatingDTypes);
  r.table(kLsqAbsSumKernels).define(DeviceType::CPU, &lsq_abs_sum_cpu, kFloatingDTypes);
  r.table(kLsqMinMaxKernels).define(DeviceType::CPU, &lsq_minmax_cpu, kFloatingDTypes);
}

}  // namespace qgrad::learnable
