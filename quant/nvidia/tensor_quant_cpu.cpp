// CPU kernels of the NVIDIA quantizers: a block-segment walker (each thread takes one contiguous
// range of elements and visits it as runs that share one grid entry) and the loops that run
// tensor_quant_elem.h's elements (quantize, backward, amax, scales) over it, registered in the
// "nvidia.*" tables at the end.
#include "quant/nvidia/tensor_quant_kernels.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/strided_loop.h"
#include "quant/nvidia/tensor_quant.h"  // kMinAmax
#include "quant/nvidia/tensor_quant_elem.h"

namespace qgrad::nvidia {

namespace {

// Visits elements [begin, end) of a contiguous tensor laid out by L as segments
// f(offset, count, grid_index, grid_step): grid_step 0 means the whole segment uses grid_index,
// 1 means element j uses grid_index + j (per-element blocks along the last axis).
template <typename F>
void walk_segments(const BlockLayout& L, std::int64_t begin, std::int64_t end, F&& f) {
  const std::size_t nd = L.dims.size();
  const std::int64_t len = L.dims[nd - 1];
  const std::int64_t b = L.block[nd - 1];
  std::int64_t i = begin;
  while (i < end) {
    const std::int64_t row = i / len;
    std::int64_t col = i - row * len;
    std::int64_t gbase = 0;
    std::int64_t r = row;
    for (std::size_t k = nd - 1; k-- > 0;) {
      const std::int64_t idx = r % L.dims[k];
      r /= L.dims[k];
      gbase += (idx / L.block[k]) * L.grid_strides[k];
    }
    const std::int64_t row_start = i - col;
    const std::int64_t row_end = std::min(end, row_start + len);
    if (b == 1) {
      f(i, row_end - i, gbase + col, std::int64_t{1});
      i = row_end;
      continue;
    }
    while (i < row_end) {
      const std::int64_t c = col / b;
      const std::int64_t seg_end = std::min(row_end, row_start + (c + 1) * b);
      f(i, seg_end - i, gbase + c, std::int64_t{0});
      col += seg_end - i;
      i = seg_end;
    }
  }
}

// Runs op over all elements in parallel; op(offset, count, grid_index, grid_step).
template <typename F>
void for_each_segment(const BlockLayout& L, F&& f) {
  parallel_for(L.numel, kParallelGrain,
               [&](std::int64_t b, std::int64_t e) { walk_segments(L, b, e, f); });
}

template <typename T>
T* ptr(const Tensor& t) {
  return static_cast<T*>(t.raw_data());
}

template <typename T>
void int_quant_impl(const Tensor& x, const Tensor& out, const BlockLayout& L, const Tensor& sq_t,
                    const Tensor& sd_t, T lo, T hi, bool fake) {
  const T* px = ptr<T>(x);
  T* po = ptr<T>(out);
  const T* sq = ptr<T>(sq_t);
  const T* sd = ptr<T>(sd_t);
  const IntQuantElem<T> quant{lo, hi};
  for_each_segment(L, [&](std::int64_t off, std::int64_t n, std::int64_t g, std::int64_t step) {
    const T* a = px + off;
    T* o = po + off;
    if (step == 0) {
      const T s = sq[g], d = sd[g];
      if (fake) {
        for (std::int64_t j = 0; j < n; ++j) o[j] = quant.fake(a[j], s, d);
      } else {
        for (std::int64_t j = 0; j < n; ++j) o[j] = quant(a[j], s);
      }
    } else {
      const T* s = sq + g;
      const T* d = sd + g;
      if (fake) {
        for (std::int64_t j = 0; j < n; ++j) o[j] = quant.fake(a[j], s[j], d[j]);
      } else {
        for (std::int64_t j = 0; j < n; ++j) o[j] = quant(a[j], s[j]);
      }
    }
  });
}

template <typename T>
void fp_scaled_impl(const Tensor& x, const Tensor& out, const BlockLayout& L, const Tensor& s_t,
                    const Tensor& d_t, const MiniFloatSpec& fmt, bool zero_small, bool fake) {
  const T* px = ptr<T>(x);
  T* po = ptr<T>(out);
  const T* ps = ptr<T>(s_t);
  const T* pd = ptr<T>(d_t);
  const FpScaledElem<T> one{MiniFloatCaster<T>(fmt),
                            zero_small ? static_cast<T>(1.0 / (1 << 24)) : T(0), fake};
  for_each_segment(L, [&](std::int64_t off, std::int64_t n, std::int64_t g, std::int64_t step) {
    const T* a = px + off;
    T* o = po + off;
    if (step == 0) {
      const T s = ps[g], d = pd[g];
      for (std::int64_t j = 0; j < n; ++j) o[j] = one(a[j], s, d);
    } else {
      for (std::int64_t j = 0; j < n; ++j) o[j] = one(a[j], ps[g + j], pd[g + j]);
    }
  });
}

// A row of per-element scales, out of line: the element is a by-value copy, so the loop keeps its
// fields in registers (stores through o cannot change them) and vectorises.
template <typename T>
QGRAD_NOINLINE void fp_divmul_row(const FpDivmulElem<T> e, const T* a, const T* s, T* o,
                                  std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j) o[j] = e(a[j], s[j]);
}

template <typename T>
void fp_divmul_impl(const Tensor& x, const Tensor& out, const BlockLayout& L, const Tensor& s_t,
                    const MiniFloatSpec& fmt, bool fake) {
  const T* px = ptr<T>(x);
  T* po = ptr<T>(out);
  const T* ps = ptr<T>(s_t);
  const FpDivmulElem<T> one{MiniFloatCaster<T>(fmt), fake};
  for_each_segment(L, [&](std::int64_t off, std::int64_t n, std::int64_t g, std::int64_t step) {
    const T* a = px + off;
    T* o = po + off;
    if (step != 0) {
      fp_divmul_row(one, a, ps + g, o, n);
      return;
    }
    // One scale for the segment: branch-free loops the compiler vectorises.
    const T s = ps[g];
    if (s == T(0)) {
      for (std::int64_t j = 0; j < n; ++j) o[j] = one.zero_scale(a[j]);
    } else if (fake) {
      for (std::int64_t j = 0; j < n; ++j) o[j] = one.fake_quant(a[j], s);
    } else {
      for (std::int64_t j = 0; j < n; ++j) o[j] = one.quant(a[j], s);
    }
  });
}

template <typename T>
void clip_ste_impl(const Tensor& dy, const Tensor& x, const Tensor& gx, const BlockLayout& L,
                   const Tensor& amax_t) {
  const T* pg = ptr<T>(dy);
  const T* px = ptr<T>(x);
  T* po = ptr<T>(gx);
  const T* am = ptr<T>(amax_t);
  for_each_segment(L, [&](std::int64_t off, std::int64_t n, std::int64_t g, std::int64_t step) {
    const T* d = pg + off;
    const T* a = px + off;
    T* o = po + off;
    if (step == 0) {
      const T m = am[g];
      for (std::int64_t j = 0; j < n; ++j) o[j] = clip_ste_grad(d[j], a[j], m);
    } else {
      const T* m = am + g;
      for (std::int64_t j = 0; j < n; ++j) o[j] = clip_ste_grad(d[j], a[j], m[j]);
    }
  });
}

template <typename T>
bool absmax_impl(const Tensor& x, const BlockLayout& L, const Tensor& grid) {
  const T* px = ptr<T>(x);
  T* pgrid = ptr<T>(grid);
  std::fill(pgrid, pgrid + L.grid_numel, T(0));
  bool nonfinite = false;
  // Each thread reduces into its own grid; max is exact and order-free, so merging is
  // deterministic.
  parallel_for(L.numel, kParallelGrain, [&](std::int64_t b, std::int64_t e) {
    std::vector<T> local(static_cast<std::size_t>(L.grid_numel), T(0));
    bool bad = false;
    walk_segments(L, b, e, [&](std::int64_t off, std::int64_t n, std::int64_t g, std::int64_t st) {
      const T* a = px + off;
      if (st == 0) {
        T m = local[g];
        for (std::int64_t j = 0; j < n; ++j) m = finite_absmax_step(m, a[j], bad);
        local[g] = m;
      } else {
        for (std::int64_t j = 0; j < n; ++j)
          local[g + j] = finite_absmax_step(local[g + j], a[j], bad);
      }
    });
#pragma omp critical(qgrad_nvidia_absmax)
    {
      for (std::int64_t k = 0; k < L.grid_numel; ++k) pgrid[k] = std::max(pgrid[k], local[k]);
      nonfinite = nonfinite || bad;
    }
  });
  return nonfinite;
}

template <typename T, typename F>
void map_contiguous(std::int64_t n, F f) {
  parallel_for(n, kParallelGrain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) f(i);
  });
}

void int_quant_cpu(const Tensor& x, const Tensor& out, const BlockLayout& L, const Tensor& sq,
                   const Tensor& sd, double lo, double hi, bool fake) {
  QGRAD_DISPATCH_FLOAT(x.dtype(), "int_quant_cpu", [&] {
    int_quant_impl<scalar_t>(x, out, L, sq, sd, static_cast<scalar_t>(lo),
                             static_cast<scalar_t>(hi), fake);
  });
}

void fp_scaled_quant_cpu(const Tensor& x, const Tensor& out, const BlockLayout& L, const Tensor& s,
                         const Tensor& d, const MiniFloatSpec& fmt, bool zero_small, bool fake) {
  QGRAD_DISPATCH_FLOAT(x.dtype(), "fp_scaled_quant_cpu",
                       [&] { fp_scaled_impl<scalar_t>(x, out, L, s, d, fmt, zero_small, fake); });
}

void fp_divmul_quant_cpu(const Tensor& x, const Tensor& out, const BlockLayout& L, const Tensor& s,
                         const MiniFloatSpec& fmt, bool fake) {
  QGRAD_DISPATCH_FLOAT(x.dtype(), "fp_divmul_quant_cpu",
                       [&] { fp_divmul_impl<scalar_t>(x, out, L, s, fmt, fake); });
}

void clip_ste_backward_cpu(const Tensor& dy, const Tensor& x, const Tensor& gx,
                           const BlockLayout& L, const Tensor& amax) {
  QGRAD_DISPATCH_FLOAT(x.dtype(), "clip_ste_backward_cpu",
                       [&] { clip_ste_impl<scalar_t>(dy, x, gx, L, amax); });
}

bool block_absmax_cpu(const Tensor& x, const BlockLayout& L, const Tensor& grid) {
  return QGRAD_DISPATCH_FLOAT(x.dtype(), "block_absmax_cpu",
                              [&] { return absmax_impl<scalar_t>(x, L, grid); });
}

void amax_scales_cpu(const Tensor& amax, double bound, const Tensor& quant_scale,
                     const Tensor& dequant_scale) {
  QGRAD_DISPATCH_FLOAT(amax.dtype(), "amax_scales_cpu", [&] {
    using T = scalar_t;
    const T* a = ptr<T>(amax);
    T* q = ptr<T>(quant_scale);
    T* d = ptr<T>(dequant_scale);
    const AmaxScalesElem<T> scales{static_cast<T>(bound), static_cast<T>(kMinAmax)};
    for (std::int64_t g = 0; g < quant_scale.numel(); ++g) q[g] = scales(a[g], d[g]);
  });
}

bool any_negative_cpu(const Tensor& x) {
  return QGRAD_DISPATCH_FLOAT(x.dtype(), "any_negative_cpu", [&] {
    const scalar_t* p = ptr<scalar_t>(x);
    const std::int64_t n = x.numel();
    bool neg = false;
    for (std::int64_t i = 0; i < n; ++i) neg |= p[i] < scalar_t(0);
    return neg;
  });
}

void affine_fake_quant_cpu(const Tensor& x, const Tensor& out, double step_d, double qz_d,
                           double lo_d, double hi_d) {
  QGRAD_DISPATCH_FLOAT(x.dtype(), "affine_fake_quant_cpu", [&] {
    using T = scalar_t;
    const AffineFakeQuantElem<T> fq{static_cast<T>(step_d), static_cast<T>(qz_d),
                                    static_cast<T>(lo_d), static_cast<T>(hi_d)};
    const T* px = ptr<T>(x);
    T* po = ptr<T>(out);
    map_contiguous<T>(x.numel(), [&](std::int64_t i) { po[i] = fq(px[i]); });
  });
}

void range_ste_backward_cpu(const Tensor& dy, const Tensor& x, const Tensor& gx, double lo_d,
                            double hi_d) {
  QGRAD_DISPATCH_FLOAT(x.dtype(), "range_ste_backward_cpu", [&] {
    using T = scalar_t;
    const RangeSteGradElem<T> ste{static_cast<T>(lo_d), static_cast<T>(hi_d)};
    const T* pd = ptr<T>(dy);
    const T* px = ptr<T>(x);
    T* po = ptr<T>(gx);
    map_contiguous<T>(x.numel(), [&](std::int64_t i) { po[i] = ste(pd[i], px[i]); });
  });
}

}  // namespace

void register_tensor_quant_cpu_kernels(KernelRegistry& r) {
  r.table(kIntQuantKernels).define(DeviceType::CPU, &int_quant_cpu, kFloatingDTypes);
  r.table(kFpScaledQuantKernels).define(DeviceType::CPU, &fp_scaled_quant_cpu, kFloatingDTypes);
  r.table(kFpDivmulQuantKernels).define(DeviceType::CPU, &fp_divmul_quant_cpu, kFloatingDTypes);
  r.table(kClipSteBackwardKernels).define(DeviceType::CPU, &clip_ste_backward_cpu, kFloatingDTypes);
  r.table(kBlockAbsmaxKernels).define(DeviceType::CPU, &block_absmax_cpu, kFloatingDTypes);
  r.table(kAnyNegativeKernels).define(DeviceType::CPU, &any_negative_cpu, kFloatingDTypes);
  r.table(kAmaxScalesKernels).define(DeviceType::CPU, &amax_scales_cpu, kFloatingDTypes);
  r.table(kAffineFakeQuantKernels).define(DeviceType::CPU, &affine_fake_quant_cpu, kFloatingDTypes);
  r.table(kRangeSteBackwardKernels)
      .define(DeviceType::CPU, &range_ste_backward_cpu, kFloatingDTypes);
}

}  // namespace qgrad::nvidia
