// CPU kernels of the two-sided learnable clip: learnable_clip_kernel.h's device-generic kernels
// through cpu::map, registered in the "learnable.clip_*" tables.
#include "core/cpu_map.h"
#include "quant/learnable/learnable_clip_kernel.h"
#include "quant/learnable/learnable_clip_kernels.h"

namespace qgrad::learnable {

namespace {

void learnable_clip_forward_cpu(const Tensor& x, const Tensor& lo, const Tensor& hi,
                                const Tensor& y) {
  learnable_clip_forward<cpu::Map>(x, lo, hi, y);
}

void learnable_clip_backward_cpu(const Tensor& dy, const Tensor& x, const Tensor& lo,
                                 const Tensor& hi, const Tensor& dx, const Tensor& dlo,
                                 const Tensor& dhi) {
  learnable_clip_backward<cpu::Map>(dy, x, lo, hi, dx, dlo, dhi);
}

}  // namespace

void register_learnable_clip_cpu_kernels(KernelRegistry& r) {
  r.table(kLearnableClipForwardKernels)
      .define(DeviceType::CPU, &learnable_clip_forward_cpu, kFloatingDTypes);
  r.table(kLearnableClipBackwardKernels)
      .define(DeviceType::CPU, &learnable_clip_backward_cpu, kFloatingDTypes);
}

}  // namespace qgrad::learnable
