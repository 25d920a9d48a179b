// CPU kernels of clip_grad_norm_: the norm of one gradient in double on one thread (index order,
// so deterministic), the total norm and clip coefficient (clip_grad_elem.h's ClipTotal), and the
// in-place scaling (clip_grad_elem.h's functor on cpu::map).
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

void grad_norm_cpu(const Tensor& g, double p, const Tensor& norms, std::int64_t slot) {
  norms.data_ptr<double>()[slot] = QGRAD_DISPATCH_FLOAT(
      g.dtype(), "clip_grad_norm_", [&] { return grad_norm_typed<scalar_t>(g, p); });
}

void clip_coef_cpu(const Tensor& norms, double p, DType dtype, double max_norm, const Tensor& out) {
  const clip_grad_elem::ClipTotal total{clip_grad_elem::NormFold::of(p), dtype == kFloat32,
                                        max_norm};
  total(norms.data_ptr<double>(), norms.numel(), out.data_ptr<double>());
}

// The coefficient is read once here, not per element as the GPU's ScaleByStored does: a
// float64 gradient could alias it, which would keep the loop from hoisting the load.
void grad_scale_cpu(const Tensor& g, const Tensor& coef) {
  const double c = coef.data_ptr<double>()[0];
  QGRAD_DISPATCH_FLOAT(g.dtype(), "clip_grad_norm_", [&] {
    cpu::Map::run<scalar_t, scalar_t>(
        "clip_grad_norm_", clip_grad_elem::Scale<scalar_t>{static_cast<scalar_t>(c)}, g, g);
  });
}

}  // namespace

void register_clip_grad_cpu_kernels(KernelRegistry& r) {
  r.table(kGradNormKernels).define(DeviceType::CPU, &grad_norm_cpu, kFloatingDTypes);
  r.table(kClipCoefKernels).define(DeviceType::CPU, &clip_coef_cpu, kFloatingDTypes);
  r.table(kGradScaleKernels).define(DeviceType::CPU, &grad_scale_cpu, kFloatingDTypes);
}

}  // namespace qgrad::nn::utils
