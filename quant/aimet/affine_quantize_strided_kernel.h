// AIMET affine quantization's strided kernels (affine_quantize_kernels.h's
// AffineForwardStridedKernel, AffineBackwardStridedKernel and RoundHalfEvenKernel) written once
// for every device: affine_quantize_elem.h's elements, computed in C (float, or double when
// `wide` or for float64) from T operands, run by the device's map (Map: cpu::Map or cuda::Map);
// the backward's dx and unreduced scale / offset gradients in one pass. What a GPU runs for every
// encoding shape. Only .cpp / .cu files that register a kernel include this.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/dtype.h"
#include "core/map_outputs.h"
#include "core/tensor.h"
#include "quant/aimet/affine_quantize_elem.h"
#include "quant/aimet/affine_quantize_kernels.h"

namespace qgrad::aimet {

// The forward of T operands in C.
template <typename T, typename C, AffineKind K>
struct AffineForwardOperands {
  C qmin, qmax;
  QGRAD_HD_INLINE T operator()(T x, T s, T o) const {
    std::uint8_t unused_mask;
    return static_cast<T>(AffineForwardElem<C, K>{qmin, qmax}(static_cast<C>(x), static_cast<C>(s),
                                                              static_cast<C>(o), unused_mask));
  }
};

// dx returned; ds and do (each rounded to T) written.
template <typename T, typename C, AffineKind K>
struct AffineGradOperands {
  C qmin, qmax;
  QGRAD_HD_INLINE T operator()(T g, T x, T s, T o, T& ds, T& dof) const {
    C a, b, c;
    AffineGradElem<C, K>{qmin, qmax}(static_cast<C>(g), static_cast<C>(x), static_cast<C>(s),
                                     static_cast<C>(o), a, b, c);
    ds = static_cast<T>(b);
    dof = static_cast<T>(c);
    return static_cast<T>(a);
  }
};

template <typename T>
struct RoundHalfEvenElem {
  QGRAD_HD_INLINE T operator()(T x) const { return hd::rint(x); }
};

// f(T{}, C{}, integral_constant<AffineKind, K>{}) for x's dtype, `wide` and kind: C is float for
// float32 unless `wide`, double otherwise. The CPU's fast kernels dispatch through it too.
template <typename F>
void dispatch_affine(DType dt, bool wide, AffineKind kind, const char* op, F&& f) {
  QGRAD_DISPATCH_FLOAT(dt, op, [&] {
    using T = scalar_t;
    auto with_c = [&](auto c) {
      switch (kind) {
        case AffineKind::Quantize:
          return f(T{}, c, std::integral_constant<AffineKind, AffineKind::Quantize>{});
        case AffineKind::Dequantize:
          return f(T{}, c, std::integral_constant<AffineKind, AffineKind::Dequantize>{});
        default:
          return f(T{}, c, std::integral_constant<AffineKind, AffineKind::QuantizeDequantize>{});
      }
    };
    if (wide || std::is_same<T, double>::value)
      with_c(double{});
    else
      with_c(float{});
  });
}

template <typename Map>
void affine_forward_strided(AffineKind kind, const Tensor& x, const Tensor& scale,
                            const Tensor& offset, std::int64_t qmin, std::int64_t qmax, bool wide,
                            const Tensor& y) {
  dispatch_affine(x.dtype(), wide, kind, "aimet affine quantization", [&](auto t, auto c, auto k) {
    using T = decltype(t);
    using C = decltype(c);
    const AffineForwardOperands<T, C, decltype(k)::value> e{static_cast<C>(qmin),
                                                            static_cast<C>(qmax)};
    Map::template run<T, T, T, T>("aimet affine quantization", e, y, x, scale, offset);
  });
}

template <typename Map>
void affine_backward_strided(AffineKind kind, const Tensor& g, const Tensor& x, const Tensor& scale,
                             const Tensor& offset, std::int64_t qmin, std::int64_t qmax, bool wide,
                             const Tensor& dx, const Tensor& dscale, const Tensor& doffset) {
  dispatch_affine(
      x.dtype(), wide, kind, "aimet affine quantization backward", [&](auto t, auto c, auto k) {
        using T = decltype(t);
        using C = decltype(c);
        const AffineGradOperands<T, C, decltype(k)::value> e{static_cast<C>(qmin),
                                                             static_cast<C>(qmax)};
        Map::template run_outputs<Outputs<T, T, T>, T, T, T, T>(
            "aimet affine quantization backward", e, {dx, dscale, doffset}, g, x, scale, offset);
      });
}

template <typename Map>
void round_half_even(const Tensor& x, const Tensor& y) {
  QGRAD_DISPATCH_FLOAT(x.dtype(), "aimet ste_round", [&] {
    Map::template run<scalar_t, scalar_t>("aimet ste_round", RoundHalfEvenElem<scalar_t>{}, y, x);
  });
}

}  // namespace qgrad::aimet
