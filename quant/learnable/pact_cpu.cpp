// CPU kernels of PACT's clipped (and optionally quantized) activation: strided loops over
// pact_elem.h's elements, registered in the "learnable.pact_*" tables.
#include "quant/learnable/pact_kernels.h"

#include "core/dtype.h"
#include "core/strided_loop.h"
#include "quant/learnable/pact_elem.h"

namespace qgrad::learnable {

namespace {

void pact_forward_cpu(const Tensor& x, const Tensor& alpha, std::int64_t levels, const Tensor& y) {
  if (y.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(x.dtype(), "pact", [&] {
    using T = scalar_t;
    const T* px = static_cast<const T*>(x.raw_data());
    const T* pa = static_cast<const T*>(alpha.raw_data());
    T* py = static_cast<T*>(y.raw_data());
    const PactForwardElem<T> e{static_cast<T>(levels), levels > 0};
    StridedLoop<3> loop(y.shape(), {y.strides(), x.strides(), alpha.strides()}, {0, 0, 0});
    loop.run([&](const std::array<std::int64_t, 3>& off, std::int64_t n,
                 const std::array<std::int64_t, 3>& st) {
      for (std::int64_t i = 0; i < n; ++i) {
        const T xv = px[off[1] + i * st[1]];
        const T a = pa[off[2] + i * st[2]];
        py[off[0] + i * st[0]] = e(xv, a);
      }
    });
  });
}

void pact_backward_cpu(const Tensor& dy, const Tensor& x, const Tensor& alpha, const Tensor& dx,
                       const Tensor& dalpha) {
  if (dx.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(x.dtype(), "pact backward", [&] {
    using T = scalar_t;
    const T* pg = static_cast<const T*>(dy.raw_data());
    const T* px = static_cast<const T*>(x.raw_data());
    const T* pa = static_cast<const T*>(alpha.raw_data());
    T* pdx = static_cast<T*>(dx.raw_data());
    T* pda = static_cast<T*>(dalpha.raw_data());
    const PactBackwardElem<T> e{};
    StridedLoop<5> loop(
        dx.shape(), {dx.strides(), dalpha.strides(), dy.strides(), x.strides(), alpha.strides()},
        {0, 0, 0, 0, 0});
    loop.run([&](const std::array<std::int64_t, 5>& off, std::int64_t n,
                 const std::array<std::int64_t, 5>& st) {
      for (std::int64_t i = 0; i < n; ++i) {
        const T g = pg[off[2] + i * st[2]];
        const T xv = px[off[3] + i * st[3]];
        const T a = pa[off[4] + i * st[4]];
        T da;
        pdx[off[0] + i * st[0]] = e(g, xv, a, da);
        pda[off[1] + i * st[1]] = da;
      }
    });
  });
}

}  // namespace

void register_pact_cpu_kernels(KernelRegistry& r) {
  r.table(kPactForwardKernels).define(DeviceType::CPU, &pact_forward_cpu, kFloatingDTypes);
  r.table(kPactBackwardKernels).define(DeviceType::CPU, &pact_backward_cpu, kFloatingDTypes);
}

}  // namespace qgrad::learnable
