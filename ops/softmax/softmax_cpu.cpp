// CPU softmax / log_softmax. The input is seen as [outer, C, inner] (DimView). When the softmax
// dim is innermost (inner == 1) each row of C elements is processed in three short passes that
// stay in cache (max, exp-sum, normalise); rows with unit stride get a separately compiled
// loop. Otherwise a tile of up to kTile neighbouring columns is processed at once, so the loops
// over the tile run along contiguous memory. Every loop is an `omp simd` loop with an inlinable
// exp (vec_math.h), so it vectorises; sums are taken in blocks in the element type and the
// blocks added in double. log_softmax writes
// (x - max) - log(sum), which stays exact for huge logits where x - (max + log(sum)) would
// round the log term away.
#include "ops/softmax/softmax_kernels.h"

#include <algorithm>
#include <cmath>

#include "core/strided_loop.h"
#include "core/vec_math.h"
#include "ops/softmax/dim_view.h"

namespace qgrad {

namespace {

constexpr std::int64_t kTile = 256;

// Adds per-column partial sums (element type) into the double totals and clears them.
template <typename T>
void flush(T* part, double* total, std::int64_t cnt) {
  for (std::int64_t i = 0; i < cnt; ++i) {
    total[i] += static_cast<double>(part[i]);
    part[i] = 0;
  }
}

// ---- forward ----

// One row of n elements at stride st (compile-time 1 when kUnit). y is contiguous and doubles
// as scratch for the exponentials.
template <bool kUnit, typename T>
void forward_row(const T* x, std::int64_t n, std::int64_t st, T* y, bool log) {
  const std::int64_t s1 = kUnit ? 1 : st;
  T m = x[0];
#pragma omp simd reduction(max : m)
  for (std::int64_t c = 1; c < n; ++c) m = x[c * s1] > m ? x[c * s1] : m;
  const double s = vec_math::blocked_sum<T>(n, [&](std::int64_t c) {
    const T e = vec_math::exp_nonpositive(static_cast<T>(x[c * s1] - m));
    y[c] = e;
    return e;
  });
  if (log) {
    const T lse = static_cast<T>(std::log(s));
#pragma omp simd
    for (std::int64_t c = 0; c < n; ++c) y[c] = (x[c * s1] - m) - lse;
  } else {
    const T inv = static_cast<T>(1.0 / s);
#pragma omp simd
    for (std::int64_t c = 0; c < n; ++c) y[c] *= inv;
  }
}

// Columns [i0, i0 + cnt) of block `o`; y points at out[o, 0, i0] (contiguous, row pitch `inner`).
template <bool kUnit, typename T>
void forward_tile(const T* xb, const DimView& v, std::int64_t cnt, T* y, bool log) {
  const std::int64_t C = v.size, cs = v.size_stride, is = kUnit ? 1 : v.inner_stride;
  const std::int64_t pitch = v.inner;
  T mx[kTile], part[kTile];
  double sm[kTile];
  for (std::int64_t i = 0; i < cnt; ++i) {
    mx[i] = xb[i * is];
    sm[i] = 0;
    part[i] = 0;
  }
  for (std::int64_t c = 1; c < C; ++c) {
    const T* xc = xb + c * cs;
#pragma omp simd
    for (std::int64_t i = 0; i < cnt; ++i) mx[i] = xc[i * is] > mx[i] ? xc[i * is] : mx[i];
  }
  for (std::int64_t c = 0; c < C; ++c) {
    const T* xc = xb + c * cs;
    T* yc = y + c * pitch;
#pragma omp simd
    for (std::int64_t i = 0; i < cnt; ++i) {
      const T e = vec_math::exp_nonpositive(static_cast<T>(xc[i * is] - mx[i]));
      yc[i] = e;
      part[i] += e;
    }
    if ((c + 1) % vec_math::kSumBlock == 0 || c + 1 == C) flush(part, sm, cnt);
  }
  T f[kTile];  // log(sum) for log_softmax, 1 / sum for softmax
  for (std::int64_t i = 0; i < cnt; ++i) f[i] = static_cast<T>(log ? std::log(sm[i]) : 1.0 / sm[i]);
  for (std::int64_t c = 0; c < C; ++c) {
    const T* xc = xb + c * cs;
    T* yc = y + c * pitch;
    if (log) {
#pragma omp simd
      for (std::int64_t i = 0; i < cnt; ++i) yc[i] = (xc[i * is] - mx[i]) - f[i];
    } else {
#pragma omp simd
      for (std::int64_t i = 0; i < cnt; ++i) yc[i] *= f[i];
    }
  }
}

// ---- backward ----

template <bool kUnit, typename T>
void backward_row(const T* g, std::int64_t n, std::int64_t st, const T* y, T* gx, bool log) {
  const std::int64_t s1 = kUnit ? 1 : st;
  if (log) {
    const T sum =
        static_cast<T>(vec_math::blocked_sum<T>(n, [&](std::int64_t c) { return g[c * s1]; }));
#pragma omp simd
    for (std::int64_t c = 0; c < n; ++c) gx[c] = g[c * s1] - vec_math::exp_nonpositive(y[c]) * sum;
  } else {
    const T dot = static_cast<T>(
        vec_math::blocked_sum<T>(n, [&](std::int64_t c) { return g[c * s1] * y[c]; }));
#pragma omp simd
    for (std::int64_t c = 0; c < n; ++c) gx[c] = y[c] * (g[c * s1] - dot);
  }
}

template <bool kUnit, typename T>
void backward_tile(const T* gb, const DimView& v, std::int64_t cnt, const T* y, T* gx, bool log) {
  const std::int64_t C = v.size, cs = v.size_stride, is = kUnit ? 1 : v.inner_stride;
  const std::int64_t pitch = v.inner;
  double acc[kTile];
  T part[kTile];
  for (std::int64_t i = 0; i < cnt; ++i) {
    acc[i] = 0;
    part[i] = 0;
  }
  for (std::int64_t c = 0; c < C; ++c) {
    const T* gc = gb + c * cs;
    const T* yc = y + c * pitch;
    if (log) {
#pragma omp simd
      for (std::int64_t i = 0; i < cnt; ++i) part[i] += gc[i * is];
    } else {
#pragma omp simd
      for (std::int64_t i = 0; i < cnt; ++i) part[i] += gc[i * is] * yc[i];
    }
    if ((c + 1) % vec_math::kSumBlock == 0 || c + 1 == C) flush(part, acc, cnt);
  }
  T s[kTile];
  for (std::int64_t i = 0; i < cnt; ++i) s[i] = static_cast<T>(acc[i]);
  for (std::int64_t c = 0; c < C; ++c) {
    const T* gc = gb + c * cs;
    const T* yc = y + c * pitch;
    T* oc = gx + c * pitch;
    if (log) {
#pragma omp simd
      for (std::int64_t i = 0; i < cnt; ++i)
        oc[i] = gc[i * is] - vec_math::exp_nonpositive(yc[i]) * s[i];
    } else {
#pragma omp simd
      for (std::int64_t i = 0; i < cnt; ++i) oc[i] = yc[i] * (gc[i * is] - s[i]);
    }
  }
}

// Runs body(o, i0, cnt) over every (outer block, column tile) job, in parallel when large.
template <typename F>
void for_each_job(const DimView& v, F&& body) {
  const std::int64_t tile = v.inner == 1 ? 1 : std::min(kTile, v.inner);
  const std::int64_t tiles = (v.inner + tile - 1) / tile;
  const std::int64_t jobs = v.outer * tiles;
  const std::int64_t per_job = std::max<std::int64_t>(1, v.size * tile);
  const std::int64_t grain = std::max<std::int64_t>(1, kParallelGrain / per_job);
  parallel_for(jobs, grain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t j = b; j < e; ++j) {
      const std::int64_t o = j / tiles, i0 = (j % tiles) * tile;
      body(o, i0, std::min(tile, v.inner - i0));
    }
  });
}

void softmax_cpu(const Tensor& x, std::int64_t dim, bool log, const Tensor& out) {
  if (out.numel() == 0) return;
  Tensor xs;
  const DimView v = dim_view_or_copy(x, dim, xs);
  QGRAD_DISPATCH_FLOAT(x.dtype(), log ? "log_softmax" : "softmax", [&] {
    using T = scalar_t;
    const T* px = static_cast<const T*>(xs.raw_data());
    T* py = out.data_ptr<T>();
    const std::int64_t block = v.size * v.inner;  // elements per outer block of `out`
    const bool unit = v.inner == 1 ? v.size_stride == 1 : v.inner_stride == 1;
    for_each_job(v, [&](std::int64_t o, std::int64_t i0, std::int64_t cnt) {
      const T* xb = px + o * v.outer_stride + i0 * v.inner_stride;
      T* yb = py + o * block + i0;
      if (v.inner == 1) {
        if (unit)
          forward_row<true>(xb, v.size, 1, yb, log);
        else
          forward_row<false>(xb, v.size, v.size_stride, yb, log);
      } else {
        if (unit)
          forward_tile<true>(xb, v, cnt, yb, log);
        else
          forward_tile<false>(xb, v, cnt, yb, log);
      }
    });
  });
}

void softmax_backward_cpu(const Tensor& g, const Tensor& y, std::int64_t dim, bool log,
                          const Tensor& grad_in) {
  if (grad_in.numel() == 0) return;
  QGRAD_CHECK(y.is_contiguous() && grad_in.is_contiguous(), Error,
              "softmax backward: saved output and gradient buffer must be contiguous");
  Tensor gs;
  const DimView v = dim_view_or_copy(g, dim, gs);
  QGRAD_DISPATCH_FLOAT(g.dtype(), log ? "log_softmax backward" : "softmax backward", [&] {
    using T = scalar_t;
    const T* pg = static_cast<const T*>(gs.raw_data());
    const T* py = y.data_ptr<T>();
    T* po = grad_in.data_ptr<T>();
    const std::int64_t block = v.size * v.inner;
    const bool unit = v.inner == 1 ? v.size_stride == 1 : v.inner_stride == 1;
    for_each_job(v, [&](std::int64_t o, std::int64_t i0, std::int64_t cnt) {
      const T* gb = pg + o * v.outer_stride + i0 * v.inner_stride;
      const std::int64_t off = o * block + i0;
      if (v.inner == 1) {
        if (unit)
          backward_row<true>(gb, v.size, 1, py + off, po + off, log);
        else
          backward_row<false>(gb, v.size, v.size_stride, py + off, po + off, log);
      } else {
        if (unit)
          backward_tile<true>(gb, v, cnt, py + off, po + off, log);
        else
          backward_tile<false>(gb, v, cnt, py + off, po + off, log);
      }
    });
  });
}

}  // namespace

void register_softmax_cpu_kernels(KernelRegistry& r) {
  r.table(kSoftmaxKernels).define(DeviceType::CPU, &softmax_cpu, kFloatingDTypes);
  r.table(kSoftmaxBackwardKernels).define(DeviceType::CPU, &softmax_backward_cpu, kFloatingDTypes);
}

}  // namespace qgrad
