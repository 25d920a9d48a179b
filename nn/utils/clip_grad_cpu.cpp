// CPU kernels of clip_grad_norm_: the norm of one gradient in double on one thread (index order,
// so deterministic), and the in-place scaling (clip_grad_elem.h's functor on cpu::map).
#include "core/cpu_map.h"
#include "nn/utils/clip_grad_elem.h"

namespace qgrad::nn::utils {

namespace {

template <typename T>
double grad_norm_typed(const Tensor& g, double p) {
  const T* d = g.data_ptr<T>();
  const std::int64_t n = g.numel();
  const clip_grad_elem::NormFold f = clip_grad_elem::NormFold::of(p);
  double acc = 0;
  for (std::int64_t i = 0; i < n; ++i) acc = f.combine(acc, f.term(static_cast<double>(d[i])));
  return f.finish(acc);
}

double grad_norm_cpu(const Tensor& g, double p) {
  return QGRAD_DISPATCH_FLOAT(g.dtype(), "clip_grad_norm_",
                              [&] { return grad_norm_typed<scalar_t>(g, p); });
}

}  // namespace

void register_clip_grad_cpu_kernels(KernelRegistry& r) {
  r.table<GradNormKernel>("grad_norm").define(DeviceType::CPU, &grad_norm_cpu, kFloatingDTypes);
  r.table<GradScaleKernel>("grad_scale")
      .define(DeviceType::CPU, &clip_grad_elem::scale<cpu::Map>, kFloatingDTypes);
}

}  // namespace qgrad::nn::utils
