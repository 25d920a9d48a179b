// CPU kernels of the two-sided learnable clip: strided loops over learnable_clip_elem.h's
// elements, registered in the "learnable.clip_*" tables.
#include "quant/learnable/learnable_clip_kernels.h"

#include "core/dtype.h"
#include "core/strided_loop.h"
#include "quant/learnable/learnable_clip_elem.h"

namespace qgrad::learnable {

namespace {

void learnable_clip_forward_cpu(const Tensor& x, const Tensor& lo, const Tensor& hi,
                                const Tensor& y) {
  if (y.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(x.dtype(), "learnable_clip", [&] {
    using T = scalar_t;
    const T* px = static_cast<const T*>(x.raw_data());
    const T* pl = static_cast<const T*>(lo.raw_data());
    const T* ph = static_cast<const T*>(hi.raw_data());
    T* py = static_cast<T*>(y.raw_data());
    const LearnableClipForwardElem<T> e{};
    StridedLoop<4> loop(y.shape(), {y.strides(), x.strides(), lo.strides(), hi.strides()},
                        {0, 0, 0, 0});
    loop.run([&](const std::array<std::int64_t, 4>& off, std::int64_t n,
                 const std::array<std::int64_t, 4>& st) {
      for (std::int64_t i = 0; i < n; ++i) {
        const T v = px[off[1] + i * st[1]];
        const T l = pl[off[2] + i * st[2]], h = ph[off[3] + i * st[3]];
        py[off[0] + i * st[0]] = e(v, l, h);
      }
    });
  });
}

void learnable_clip_backward_cpu(const Tensor& dy, const Tensor& x, const Tensor& lo,
                                 const Tensor& hi, const Tensor& dx, const Tensor& dlo,
                                 const Tensor& dhi) {
  if (dx.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(x.dtype(), "learnable_clip backward", [&] {
    using T = scalar_t;
    const T* pg = static_cast<const T*>(dy.raw_data());
    const T* px = static_cast<const T*>(x.raw_data());
    const T* pl = static_cast<const T*>(lo.raw_data());
    const T* ph = static_cast<const T*>(hi.raw_data());
    T* pdx = static_cast<T*>(dx.raw_data());
    T* pdl = static_cast<T*>(dlo.raw_data());
    T* pdh = static_cast<T*>(dhi.raw_data());
    const LearnableClipBackwardElem<T> e{};
    StridedLoop<7> loop(dx.shape(),
                        {dx.strides(), dlo.strides(), dhi.strides(), dy.strides(), x.strides(),
                         lo.strides(), hi.strides()},
                        {0, 0, 0, 0, 0, 0, 0});
    loop.run([&](const std::array<std::int64_t, 7>& off, std::int64_t n,
                 const std::array<std::int64_t, 7>& st) {
      for (std::int64_t i = 0; i < n; ++i) {
        const T g = pg[off[3] + i * st[3]];
        const T v = px[off[4] + i * st[4]];
        const T l = pl[off[5] + i * st[5]], h = ph[off[6] + i * st[6]];
        T dl, dh;
        pdx[off[0] + i * st[0]] = e(g, v, l, h, dl, dh);
        pdl[off[1] + i * st[1]] = dl;
        pdh[off[2] + i * st[2]] = dh;
      }
    });
  });
}

}  // namespace

void register_learnable_clip_cpu_kernels(KernelRegistry& r) {
  r.table(kLearnableClipForwardKernels)
      .define(DeviceType::CPU, &learnable_clip_forward_cpu, kFloatingDTypes);
  r.table(kLearnableClipBackwardKernels)
      .define(DeviceType::CPU, &learnable_clip_backward_cpu, kFloatingDTypes);
}

}  // namespace qgrad::learnable
