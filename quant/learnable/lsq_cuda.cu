// CUDA kernels of LSQ / LSQ+: lsq_kernel.h's device-generic passes through cuda::map (the CPU's
// elements), and the initialisation statistics from the ops' reductions (float64, NaN
// propagating; read once, when a quantizer initialises), registered in the "learnable.lsq_*"
// tables.
#include <utility>

#include "core/cuda_map.cuh"
#include "core/dtype.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"
#include "quant/learnable/lsq_kernel.h"
#include "quant/learnable/lsq_kernels.h"

namespace qgrad::learnable {

namespace {

void lsq_forward_cuda(const Tensor& x, const Tensor& s, const Tensor& beta, double lo, double hi,
                      const Tensor& y) {
  lsq_forward<cuda::Map>(x, s, beta, lo, hi, y);
}

void lsq_backward_cuda(const Tensor& dy, const Tensor& x, const Tensor& s, const Tensor& beta,
                       double lo, double hi, double grad_scale, const Tensor& dx, const Tensor& ds,
                       const Tensor& dbeta) {
  lsq_backward<cuda::Map>(dy, x, s, beta, lo, hi, grad_scale, dx, ds, dbeta);
}

double lsq_abs_sum_cuda(const Tensor& v) {
  return sum(abs(v.to(kFloat64))).item<double>();
}

std::pair<double, double> lsq_minmax_cuda(const Tensor& x) {
  const Tensor d = x.to(kFloat64);
  return {amin(d).item<double>(), amax(d).item<double>()};
}

}  // namespace

void register_lsq_cuda_kernels(KernelRegistry& r) {
  r.table(kLsqForwardKernels).define(DeviceType::CUDA, &lsq_forward_cuda, kFloatingDTypes);
  r.table(kLsqBackwardKernels).define(DeviceType::CUDA, &lsq_backward_cuda, kFloatingDTypes);
  r.table(kLsqAbsSumKernels).define(DeviceType::CUDA, &lsq_abs_sum_cuda, kFloatingDTypes);
  r.table(kLsqMinMaxKernels).define(DeviceType::CUDA, &lsq_minmax_cuda, kFloatingDTypes);
}

}  // namespace qgrad::learnable
