// CPU kernels of AIMET affine quantization, in AIMET's operation order: x / scale (a division),
// round half to even, subtract the offset, clamp, add the offset, multiply by the scale. The
// per-element math is affine_quantize_elem.h's; this file holds the loops and reductions.
//
// Fast kernels: the flat range of a contiguous x splits into runs of one channel (a row of
// `inner` elements with one scale and offset, read once) or, when channels are innermost, runs
// through consecutive channels (scale and offset read from contiguous arrays); both loops are
// plain enough to vectorise. The backward's per-channel sums are taken over boxes fixed by the
// layout: a box is up to kBox elements (whole rows of up to kBoxChannels channels and several
// outer indices, or a kBox-element segment of a longer row). Inside a box each run is computed
// in chunks (dx stored, the rounded ds / do values kept in a stack buffer) and summed in
// kLanes double lanes folded pairwise; a box's partial sums go to its own slots, and the slots
// are added box by box in order at the end.
//
// Strided kernels: affine_quantize_strided_kernel.h's, written once for every device, through
// cpu::map (each element reads its scale and offset through a possibly zero stride).
//
// All are registered in the "aimet.*" tables at the end.
#include "quant/aimet/affine_quantize_kernels.h"

#include <algorithm>
#include <vector>

#include "core/cpu_map.h"
#include "core/dtype.h"
#include "quant/aimet/affine_quantize_elem.h"
#include "quant/aimet/affine_quantize_strided_kernel.h"

namespace qgrad::aimet {

namespace {

constexpr std::int64_t kBox = 16384;        // elements of one reduction box (at most, roughly)
constexpr std::int64_t kBoxChannels = 256;  // channels of one box
constexpr std::int64_t kChunk = 512;        // elements per stack buffer of a run
constexpr int kLanes = 8;                   // double accumulators of a run's sum

// The encoding of a run: the channel's scale and offset for every element...
template <typename T, typename C>
struct ConstEnc {
  C s, o;
  ConstEnc(const T* ps, const T* po) : s(static_cast<C>(*ps)), o(static_cast<C>(*po)) {}
  C scale(std::int64_t) const { return s; }
  C offset(std::int64_t) const { return o; }
};
// ... or, channels innermost, element i of the run is channel c + i.
template <typename T, typename C>
struct ArrayEnc {
  const T* s;
  const T* o;
  ArrayEnc(const T* ps, const T* po) : s(ps), o(po) {}
  C scale(std::int64_t i) const { return static_cast<C>(s[i]); }
  C offset(std::int64_t i) const { return static_cast<C>(o[i]); }
};

// f(begin, n, channel) for the runs of flat positions [b, e) of the layout.
template <typename F>
void for_each_run(const EncodingLayout& l, std::int64_t b, std::int64_t e, F&& f) {
  if (l.inner == 1) {
    std::int64_t c = b % l.channels;
    for (std::int64_t i = b; i < e;) {
      const std::int64_t n = std::min(l.channels - c, e - i);
      f(i, n, c);
      i += n;
      c = 0;
    }
    return;
  }
  const std::int64_t r = b / l.inner;
  std::int64_t c = r % l.channels, j = b - r * l.inner;
  for (std::int64_t i = b; i < e;) {
    const std::int64_t n = std::min(l.inner - j, e - i);
    f(i, n, c);
    i += n;
    j = 0;
    if (++c == l.channels) c = 0;
  }
}

// ---------------------------------------------------------------------------------------------
// Forward.

template <typename T, typename C, AffineKind K, bool M, typename Enc>
void forward_run(const T* __restrict__ x, T* __restrict__ y, std::uint8_t* __restrict__ m,
                 std::int64_t n, const Enc e, C qmin, C qmax) {
  const AffineForwardElem<C, K> f{qmin, qmax};
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint8_t mi;
    const C r = f(static_cast<C>(x[i]), e.scale(i), e.offset(i), mi);
    if constexpr (M) m[i] = mi;
    y[i] = static_cast<T>(r);
  }
}

template <typename T, typename C, AffineKind K, bool M, typename Enc>
void forward_layout(const EncodingLayout& l, const T* x, T* y, std::uint8_t* m, const T* ps,
                    const T* po, C qmin, C qmax) {
  parallel_for(l.numel(), kParallelGrain, [&](std::int64_t b, std::int64_t e) {
    for_each_run(l, b, e, [&](std::int64_t i, std::int64_t n, std::int64_t c) {
      std::uint8_t* mm = nullptr;
      if constexpr (M) mm = m + i;
      forward_run<T, C, K, M>(x + i, y + i, mm, n, Enc(ps + c, po + c), qmin, qmax);
    });
  });
}

template <typename T, typename C, AffineKind K>
void forward_typed(const EncodingLayout& l, const Tensor& x, const Tensor& s, const Tensor& o,
                   C qmin, C qmax, const Tensor& y, const Tensor& mask) {
  const T* px = static_cast<const T*>(x.raw_data());
  const T* ps = static_cast<const T*>(s.raw_data());
  const T* po = static_cast<const T*>(o.raw_data());
  T* py = static_cast<T*>(y.raw_data());
  std::uint8_t* pm = mask.defined() ? static_cast<std::uint8_t*>(mask.raw_data()) : nullptr;
  const bool per_element = l.inner == 1;
  if constexpr (K != AffineKind::Dequantize) {
    if (pm) {
      if (per_element)
        return forward_layout<T, C, K, true, ArrayEnc<T, C>>(l, px, py, pm, ps, po, qmin, qmax);
      return forward_layout<T, C, K, true, ConstEnc<T, C>>(l, px, py, pm, ps, po, qmin, qmax);
    }
  }
  if (per_element)
    return forward_layout<T, C, K, false, ArrayEnc<T, C>>(l, px, py, nullptr, ps, po, qmin, qmax);
  forward_layout<T, C, K, false, ConstEnc<T, C>>(l, px, py, nullptr, ps, po, qmin, qmax);
}

// ---------------------------------------------------------------------------------------------
// Backward: dx from the mask.

template <typename T, typename C, AffineKind K, typename Enc>
void dx_run(const T* __restrict__ g, const std::uint8_t* __restrict__ m, T* __restrict__ dx,
            std::int64_t n, const Enc e) {
  const AffineDxElem<C, K> f{};
  for (std::int64_t i = 0; i < n; ++i) {
    // Dequantize has no mask (m is null there).
    const std::uint8_t mi = K == AffineKind::Dequantize ? std::uint8_t{0} : m[i];
    dx[i] = static_cast<T>(f(static_cast<C>(g[i]), mi, e.scale(i)));
  }
}

template <typename T, typename C, AffineKind K, typename Enc>
void dx_layout(const EncodingLayout& l, const T* g, const std::uint8_t* m, const T* ps, T* dx) {
  parallel_for(l.numel(), kParallelGrain, [&](std::int64_t b, std::int64_t e) {
    for_each_run(l, b, e, [&](std::int64_t i, std::int64_t n, std::int64_t c) {
      const std::uint8_t* mm = nullptr;
      if constexpr (K != AffineKind::Dequantize) mm = m + i;
      dx_run<T, C, K>(g + i, mm, dx + i, n, Enc(ps + c, ps + c));
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Backward: all gradients from x, with per-channel sums.

template <typename T>
inline void add_lanes(const T* v, std::int64_t n, double* lanes) {
  std::int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int k = 0; k < kLanes; ++k) lanes[k] += static_cast<double>(v[j + k]);
  for (int k = 0; j + k < n; ++k) lanes[k] += static_cast<double>(v[j + k]);
}

inline double fold_lanes(double* lanes) {
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int k = 0; k < w; ++k) lanes[k] += lanes[k + w];
  return lanes[0];
}

// One run of one channel: dx stored (DX), the sums of the rounded ds / do values added to
// sum_s / sum_o.
template <typename T, typename C, AffineKind K, bool DX>
void grad_run(const T* __restrict__ g, const T* __restrict__ x, T* __restrict__ dx, std::int64_t n,
              C s, C o, C qmin, C qmax, double& sum_s, double& sum_o) {
  alignas(64) T bs[kChunk];
  alignas(64) T bo[kChunk];
  double ls[kLanes] = {}, lo[kLanes] = {};
  const AffineGradElem<C, K> f{qmin, qmax};
  for (std::int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const std::int64_t len = std::min(kChunk, n - i0);
    const T* __restrict__ gg = g + i0;
    const T* __restrict__ xx = x + i0;
    for (std::int64_t j = 0; j < len; ++j) {
      C a, b, c;
      f(static_cast<C>(gg[j]), static_cast<C>(xx[j]), s, o, a, b, c);
      if constexpr (DX) dx[i0 + j] = static_cast<T>(a);
      bs[j] = static_cast<T>(b);
      bo[j] = static_cast<T>(c);
    }
    add_lanes(bs, len, ls);
    add_lanes(bo, len, lo);
  }
  sum_s += fold_lanes(ls);
  sum_o += fold_lanes(lo);
}

// A row of consecutive channels (channels innermost): element j is channel c0 + j; its ds / do
// go to slots ps[j] / po[j].
template <typename T, typename C, AffineKind K, bool DX>
void grad_row(const T* __restrict__ g, const T* __restrict__ x, T* __restrict__ dx, std::int64_t n,
              const T* __restrict__ s, const T* __restrict__ o, C qmin, C qmax,
              double* __restrict__ ps, double* __restrict__ po) {
  const AffineGradElem<C, K> f{qmin, qmax};
  for (std::int64_t j = 0; j < n; ++j) {
    C a, b, c;
    f(static_cast<C>(g[j]), static_cast<C>(x[j]), static_cast<C>(s[j]), static_cast<C>(o[j]), a, b,
      c);
    if constexpr (DX) dx[j] = static_cast<T>(a);
    ps[j] += static_cast<double>(static_cast<T>(b));
    po[j] += static_cast<double>(static_cast<T>(c));
  }
}

// The boxes of a layout; box index = (outer block * channel blocks + channel block) * segments +
// segment.
struct BoxPlan {
  std::int64_t seg = 1, nseg = 1;  // a row's segments
  std::int64_t cw = 1, ncb = 1;    // channels per box, channel blocks
  std::int64_t oh = 1, nob = 1;    // outer indices per box, outer blocks
  std::int64_t boxes() const { return nob * ncb * nseg; }
};

BoxPlan box_plan(const EncodingLayout& l) {
  BoxPlan p;
  if (l.inner >= kBox) {
    p.seg = kBox;
    p.nseg = (l.inner + kBox - 1) / kBox;
  } else {
    p.seg = l.inner;
    p.cw = std::min({l.channels, std::max<std::int64_t>(1, kBox / l.inner), kBoxChannels});
    p.oh = std::max<std::int64_t>(1, kBox / (p.cw * l.inner));
  }
  p.ncb = (l.channels + p.cw - 1) / p.cw;
  p.nob = (l.outer + p.oh - 1) / p.oh;
  return p;
}

template <typename T, typename C, AffineKind K, bool DX>
void backward_typed(const EncodingLayout& l, const Tensor& g, const Tensor& x, const Tensor& s,
                    const Tensor& o, C qmin, C qmax, const Tensor& dx, const Tensor& ds,
                    const Tensor& dof) {
  const T* pg = static_cast<const T*>(g.raw_data());
  const T* px = static_cast<const T*>(x.raw_data());
  const T* ps = static_cast<const T*>(s.raw_data());
  const T* po = static_cast<const T*>(o.raw_data());
  T* pdx = DX ? static_cast<T*>(dx.raw_data()) : nullptr;
  const BoxPlan p = box_plan(l);
  const std::int64_t nb = p.boxes();
  std::vector<double> part_s(static_cast<std::size_t>(nb * p.cw), 0.0);
  std::vector<double> part_o(part_s.size(), 0.0);
  const std::int64_t box_elems = p.oh * p.cw * std::min(p.seg, l.inner);
  const std::int64_t grain =
      std::max<std::int64_t>(1, kParallelGrain / std::max<std::int64_t>(box_elems, 1));
  parallel_for(nb, grain, [&](std::int64_t b0, std::int64_t b1) {
    for (std::int64_t b = b0; b < b1; ++b) {
      const std::int64_t k = b % p.nseg, cb = (b / p.nseg) % p.ncb, ob = b / (p.nseg * p.ncb);
      const std::int64_t c0 = cb * p.cw, c1 = std::min(l.channels, c0 + p.cw);
      const std::int64_t o0 = ob * p.oh, o1 = std::min(l.outer, o0 + p.oh);
      const std::int64_t k0 = k * p.seg, len = std::min(p.seg, l.inner - k0);
      double* bs = part_s.data() + b * p.cw;
      double* bo = part_o.data() + b * p.cw;
      for (std::int64_t oi = o0; oi < o1; ++oi) {
        if (l.inner == 1) {
          const std::int64_t off = oi * l.channels + c0;
          grad_row<T, C, K, DX>(pg + off, px + off, DX ? pdx + off : nullptr, c1 - c0, ps + c0,
                                po + c0, qmin, qmax, bs, bo);
          continue;
        }
        for (std::int64_t c = c0; c < c1; ++c) {
          const std::int64_t off = (oi * l.channels + c) * l.inner + k0;
          grad_run<T, C, K, DX>(pg + off, px + off, DX ? pdx + off : nullptr, len,
                                static_cast<C>(ps[c]), static_cast<C>(po[c]), qmin, qmax,
                                bs[c - c0], bo[c - c0]);
        }
      }
    }
  });
  // Box partials added in box order: per channel, outer blocks then segments in order.
  std::vector<double> acc_s(static_cast<std::size_t>(l.channels), 0.0), acc_o(acc_s.size(), 0.0);
  for (std::int64_t b = 0; b < nb; ++b) {
    const std::int64_t c0 = ((b / p.nseg) % p.ncb) * p.cw, c1 = std::min(l.channels, c0 + p.cw);
    for (std::int64_t c = c0; c < c1; ++c) {
      acc_s[static_cast<std::size_t>(c)] += part_s[static_cast<std::size_t>(b * p.cw + c - c0)];
      acc_o[static_cast<std::size_t>(c)] += part_o[static_cast<std::size_t>(b * p.cw + c - c0)];
    }
  }
  if (ds.defined()) {
    T* out = static_cast<T*>(ds.raw_data());
    for (std::int64_t c = 0; c < l.channels; ++c)
      out[c] = static_cast<T>(acc_s[static_cast<std::size_t>(c)]);
  }
  if (dof.defined()) {
    T* out = static_cast<T*>(dof.raw_data());
    for (std::int64_t c = 0; c < l.channels; ++c)
      out[c] = static_cast<T>(acc_o[static_cast<std::size_t>(c)]);
  }
}

void affine_forward_cpu(AffineKind kind, const EncodingLayout& l, const Tensor& x,
                        const Tensor& scale, const Tensor& offset, std::int64_t qmin,
                        std::int64_t qmax, bool wide, const Tensor& y, const Tensor& mask) {
  if (l.numel() == 0) return;
  dispatch_affine(x.dtype(), wide, kind, "aimet affine quantization", [&](auto t, auto c, auto k) {
    using C = decltype(c);
    forward_typed<decltype(t), C, decltype(k)::value>(l, x, scale, offset, static_cast<C>(qmin),
                                                      static_cast<C>(qmax), y, mask);
  });
}

void affine_backward_dx_cpu(AffineKind kind, const EncodingLayout& l, const Tensor& g,
                            const Tensor& mask, const Tensor& scale, bool wide, const Tensor& dx) {
  if (l.numel() == 0) return;
  dispatch_affine(
      g.dtype(), wide, kind, "aimet affine quantization backward", [&](auto t, auto c, auto k) {
        using T = decltype(t);
        using C = decltype(c);
        constexpr AffineKind K = decltype(k)::value;
        const T* pg = static_cast<const T*>(g.raw_data());
        const T* ps = static_cast<const T*>(scale.raw_data());
        const std::uint8_t* pm =
            mask.defined() ? static_cast<const std::uint8_t*>(mask.raw_data()) : nullptr;
        T* pdx = static_cast<T*>(dx.raw_data());
        if (l.inner == 1)
          dx_layout<T, C, K, ArrayEnc<T, C>>(l, pg, pm, ps, pdx);
        else
          dx_layout<T, C, K, ConstEnc<T, C>>(l, pg, pm, ps, pdx);
      });
}

void affine_backward_cpu(AffineKind kind, const EncodingLayout& l, const Tensor& g, const Tensor& x,
                         const Tensor& scale, const Tensor& offset, std::int64_t qmin,
                         std::int64_t qmax, bool wide, const Tensor& dx, const Tensor& dscale,
                         const Tensor& doffset) {
  dispatch_affine(x.dtype(), wide, kind, "aimet affine quantization backward",
                  [&](auto t, auto c, auto k) {
                    using T = decltype(t);
                    using C = decltype(c);
                    constexpr AffineKind K = decltype(k)::value;
                    if (dx.defined())
                      backward_typed<T, C, K, true>(l, g, x, scale, offset, static_cast<C>(qmin),
                                                    static_cast<C>(qmax), dx, dscale, doffset);
                    else
                      backward_typed<T, C, K, false>(l, g, x, scale, offset, static_cast<C>(qmin),
                                                     static_cast<C>(qmax), dx, dscale, doffset);
                  });
}

void affine_forward_strided_cpu(AffineKind kind, const Tensor& x, const Tensor& scale,
                                const Tensor& offset, std::int64_t qmin, std::int64_t qmax,
                                bool wide, const Tensor& y) {
  affine_forward_strided<cpu::Map>(kind, x, scale, offset, qmin, qmax, wide, y);
}

void affine_backward_strided_cpu(AffineKind kind, const Tensor& g, const Tensor& x,
                                 const Tensor& scale, const Tensor& offset, std::int64_t qmin,
                                 std::int64_t qmax, bool wide, const Tensor& dx,
                                 const Tensor& dscale, const Tensor& doffset) {
  affine_backward_strided<cpu::Map>(kind, g, x, scale, offset, qmin, qmax, wide, dx, dscale,
                                    doffset);
}

void round_half_even_cpu(const Tensor& x, const Tensor& y) {
  round_half_even<cpu::Map>(x, y);
}

}  // namespace

void register_affine_quantize_cpu_kernels(KernelRegistry& r) {
  r.table(kAffineForwardKernels).define(DeviceType::CPU, &affine_forward_cpu, kFloatingDTypes);
  r.table(kAffineBackwardDxKernels)
      .define(DeviceType::CPU, &affine_backward_dx_cpu, kFloatingDTypes);
  r.table(kAffineBackwardKernels).define(DeviceType::CPU, &affine_backward_cpu, kFloatingDTypes);
  r.table(kAffineForwardStridedKernels)
      .define(DeviceType::CPU, &affine_forward_strided_cpu, kFloatingDTypes);
  r.table(kAffineBackwardStridedKernels)
      .define(DeviceType::CPU, &affine_backward_strided_cpu, kFloatingDTypes);
  r.table(kRoundHalfEvenKernels).define(DeviceType::CPU, &round_half_even_cpu, kFloatingDTypes);
}

}  // namespace qgrad::aimet
