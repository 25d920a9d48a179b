// CPU kernels of AIMET affine quantization, in AIMET's operation order: x / scale (a division),
// round half to even, subtract the offset, clamp, add the offset, multiply by the scale. Each
// element reads its scale and offset through a (possibly zero) stride.
#include "quant/aimet/affine_quantize_cpu.h"

#include <cmath>

#include "core/dtype.h"
#include "core/strided_loop.h"

namespace qgrad::aimet {

namespace {

template <typename C>
C clampv(C v, C lo, C hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

template <typename T, typename C>
void forward(AffineKind kind, const Tensor& x, const Tensor& s, const Tensor& o, C qmin, C qmax,
             const Tensor& y) {
  const T* px = static_cast<const T*>(x.raw_data());
  const T* ps = static_cast<const T*>(s.raw_data());
  const T* po = static_cast<const T*>(o.raw_data());
  T* py = static_cast<T*>(y.raw_data());
  StridedLoop<4> loop(y.shape(), {y.strides(), x.strides(), s.strides(), o.strides()},
                      {0, 0, 0, 0});
  loop.run([&](const std::array<std::int64_t, 4>& off, std::int64_t n,
               const std::array<std::int64_t, 4>& st) {
    T* yy = py + off[0];
    const T* xx = px + off[1];
    const T* ss = ps + off[2];
    const T* oo = po + off[3];
    for (std::int64_t i = 0; i < n; ++i) {
      const C xv = static_cast<C>(xx[i * st[1]]);
      const C sv = static_cast<C>(ss[i * st[2]]);
      const C ov = static_cast<C>(oo[i * st[3]]);
      C r;
      switch (kind) {
        case AffineKind::Quantize:
          r = clampv<C>(std::nearbyint(xv / sv) - ov, qmin, qmax);
          break;
        case AffineKind::Dequantize:
          r = (xv + ov) * sv;
          break;
        default:
          r = (clampv<C>(std::nearbyint(xv / sv) - ov, qmin, qmax) + ov) * sv;
      }
      yy[i * st[0]] = static_cast<T>(r);
    }
  });
}

template <typename T, typename C>
void backward(AffineKind kind, const Tensor& g, const Tensor& x, const Tensor& s, const Tensor& o,
              C qmin, C qmax, const Tensor& dx, const Tensor& ds, const Tensor& dof) {
  const T* pg = static_cast<const T*>(g.raw_data());
  const T* px = static_cast<const T*>(x.raw_data());
  const T* ps = static_cast<const T*>(s.raw_data());
  const T* po = static_cast<const T*>(o.raw_data());
  T* pdx = static_cast<T*>(dx.raw_data());
  T* pds = static_cast<T*>(ds.raw_data());
  T* pdo = static_cast<T*>(dof.raw_data());
  StridedLoop<7> loop(dx.shape(),
                      {dx.strides(), ds.strides(), dof.strides(), g.strides(), x.strides(),
                       s.strides(), o.strides()},
                      {0, 0, 0, 0, 0, 0, 0});
  loop.run([&](const std::array<std::int64_t, 7>& off, std::int64_t n,
               const std::array<std::int64_t, 7>& st) {
    for (std::int64_t i = 0; i < n; ++i) {
      const C gv = static_cast<C>(pg[off[3] + i * st[3]]);
      const C xv = static_cast<C>(px[off[4] + i * st[4]]);
      const C sv = static_cast<C>(ps[off[5] + i * st[5]]);
      const C ov = static_cast<C>(po[off[6] + i * st[6]]);
      C a, b, c;
      if (kind == AffineKind::Dequantize) {
        a = gv * sv;
        b = gv * (xv + ov);
        c = gv * sv;
      } else {
        const C t = xv / sv;
        const C r = std::nearbyint(t);
        const C xr = r - ov;
        const C m = (qmin <= xr && xr <= qmax) ? C(1) : C(0);
        if (kind == AffineKind::Quantize) {
          const C gm = gv * m;
          a = gm / sv;
          b = -(gm / sv) * t;
          c = -gm;
        } else {
          a = gv * m;
          b = gv * (clampv<C>(r, ov + qmin, ov + qmax) - t * m);
          c = gv * ((C(1) - m) * sv);
        }
      }
      pdx[off[0] + i * st[0]] = static_cast<T>(a);
      pds[off[1] + i * st[1]] = static_cast<T>(b);
      pdo[off[2] + i * st[2]] = static_cast<T>(c);
    }
  });
}

}  // namespace

void affine_forward_cpu(AffineKind kind, const Tensor& x, const Tensor& scale, const Tensor& offset,
                        std::int64_t qmin, std::int64_t qmax, bool wide, const Tensor& y) {
  if (y.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(x.dtype(), "aimet affine quantization", [&] {
    using T = scalar_t;
    if (wide || std::is_same<T, double>::value)
      forward<T, double>(kind, x, scale, offset, static_cast<double>(qmin),
                         static_cast<double>(qmax), y);
    else
      forward<T, float>(kind, x, scale, offset, static_cast<float>(qmin), static_cast<float>(qmax),
                        y);
  });
}

void affine_backward_cpu(AffineKind kind, const Tensor& g, const Tensor& x, const Tensor& scale,
                         const Tensor& offset, std::int64_t qmin, std::int64_t qmax, bool wide,
                         const Tensor& dx, const Tensor& dscale, const Tensor& doffset) {
  if (dx.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(x.dtype(), "aimet affine quantization backward", [&] {
    using T = scalar_t;
    if (wide || std::is_same<T, double>::value)
      backward<T, double>(kind, g, x, scale, offset, static_cast<double>(qmin),
                          static_cast<double>(qmax), dx, dscale, doffset);
    else
      backward<T, float>(kind, g, x, scale, offset, static_cast<float>(qmin),
                         static_cast<float>(qmax), dx, dscale, doffset);
  });
}

void round_half_even_cpu(const Tensor& x, const Tensor& y) {
  if (y.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(x.dtype(), "aimet ste_round", [&] {
    using T = scalar_t;
    const T* px = static_cast<const T*>(x.raw_data());
    T* py = static_cast<T*>(y.raw_data());
    StridedLoop<2> loop(y.shape(), {y.strides(), x.strides()}, {0, 0});
    loop.run([&](const std::array<std::int64_t, 2>& off, std::int64_t n,
                 const std::array<std::int64_t, 2>& st) {
      for (std::int64_t i = 0; i < n; ++i)
        py[off[0] + i * st[0]] = std::nearbyint(px[off[1] + i * st[1]]);
    });
  });
}

}  // namespace qgrad::aimet
