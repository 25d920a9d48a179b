// CPU kernels of PACT's clipped (and optionally quantized) activation: pact_kernel.h's
// device-generic kernels through cpu::map, registered in the "learnable.pact_*" tables.
#include "core/cpu_map.h"
#include "quant/learnable/pact_kernel.h"
#include "quant/learnable/pact_kernels.h"

namespace qgrad::learnable {

namespace {

void pact_forward_cpu(const Tensor& x, const Tensor& alpha, std::int64_t levels, const Tensor& y) {
  pact_forward<cpu::Map>(x, alpha, levels, y);
}

void pact_backward_cpu(const Tensor& dy, const Tensor& x, const Tensor& alpha, const Tensor& dx,
                       const Tensor& dalpha) {
  pact_backward<cpu::Map>(dy, x, alpha, dx, dalpha);
}

}  // namespace

void register_pact_cpu_kernels(KernelRegistry& r) {
  r.table(kPactForwardKernels).define(DeviceType::CPU, &pact_forward_cpu, kFloatingDTypes);
  r.table(kPactBackwardKernels).define(DeviceType::CPU, &pact_backward_cpu, kFloatingDTypes);
}

}  // namespace qgrad::learnable
