// CUDA kernels of PACT's clipped (and optionally quantized) activation: pact_kernel.h's
// device-generic kernels through cuda::map, the CPU's elements, registered in the
// "learnable.pact_*" tables.
#include "core/cuda_map.cuh"
#include "quant/learnable/pact_kernel.h"
#include "quant/learnable/pact_kernels.h"

namespace qgrad::learnable {

namespace {

void pact_forward_cuda(const Tensor& x, const Tensor& alpha, std::int64_t levels, const Tensor& y) {
  pact_forward<cuda::Map>(x, alpha, levels, y);
}

void pact_backward_cuda(const Tensor& dy, const Tensor& x, const Tensor& alpha, const Tensor& dx,
                        const Tensor& dalpha) {
  pact_backward<cuda::Map>(dy, x, alpha, dx, dalpha);
}

}  // namespace

void register_pact_cuda_kernels(KernelRegistry& r) {
  r.table(kPactForwardKernels).define(DeviceType::CUDA, &pact_forward_cuda, kFloatingDTypes);
  r.table(kPactBackwardKernels).define(DeviceType::CUDA, &pact_backward_cuda, kFloatingDTypes);
}

}  // namespace qgrad::learnable
