// CPU kernels of the two-sided learnable clip, registered in the "learnable.clip_*" tables.
#include "quant/learnable/learnable_clip_kernels.h"

#include "core/dtype.h"
#include "core/strided_loop.h"

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
    StridedLoop<4> loop(y.shape(), {y.strides(), x.strides(), lo.strides(), hi.strides()},
                        {0, 0, 0, 0});
    loop.run([&](const std::array<std::int64_t, 4>& off, std::int64_t n,
                 const std::array<std::int64_t, 4>& st) {
      for (std::int64_t i = 0; i < n; ++i) {
        const T v = px[off[1] + i * st[1]];
        const T l = pl[off[2] + i * st[2]], h = ph[off[3] + i * st[3]];
        // torch.min(x, hi) then torch.max(., lo) as PyTorch's vectorised CPU kernels compute
        // them: a tie returns the bound (clip(-0.0, 0, 6) = +0.0), NaN propagates.
        const T m = (v != v) ? v : (v < h ? v : h);
        py[off[0] + i * st[0]] = (m != m) ? m : (m > l ? m : l);
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
        // pq's ClipFunction: float masks and multiplies, so a masked element with a negative
        // dy gives -0.0 and NaN in dy propagates; NaN x is outside both masks.
        const T min_mask = v > l ? T(1) : T(0);
        const T max_mask = v < h ? T(1) : T(0);
        pdx[off[0] + i * st[0]] = g * min_mask * max_mask;
        pdl[off[1] + i * st[1]] = g * (T(1) - min_mask);
        pdh[off[2] + i * st[2]] = g * (T(1) - max_mask);
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
