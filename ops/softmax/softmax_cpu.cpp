// CPU softmax / log_softmax. The input is seen as [outer, C, inner] (DimView). When the softmax
// dim is innermost (inner == 1) each row of C elements is processed in three short passes that
// stay in cache (max, exp-sum, normalise). Otherwise a tile of up to kTile neighbouring columns
// is processed at once, so the loops over the tile run along contiguous memory and vectorise.
// Sums are accumulated in double; log_softmax writes (x - max) - log(sum), which stays exact for
// huge logits where (x - (max + log(sum))) would round away the log term.
#include "ops/softmax/softmax_cpu.h"

#include <algorithm>
#include <cmath>

#include "core/strided_loop.h"
#include "ops/softmax/dim_view.h"

namespace qgrad {

namespace {

constexpr std::int64_t kTile = 256;

template <typename T>
inline T max_of(T a, T b) {
  return b > a ? b : a;  // keeps a NaN in `a`; a NaN anywhere poisons the sum anyway
}

// ---- forward ----

template <typename T>
void forward_row(const T* x, std::int64_t n, std::int64_t st, T* y, bool log) {
  T m = x[0];
  for (std::int64_t c = 1; c < n; ++c) m = max_of(m, x[c * st]);
  double s = 0;
  if (log) {
    for (std::int64_t c = 0; c < n; ++c) s += static_cast<double>(std::exp(x[c * st] - m));
    const T lse = static_cast<T>(std::log(s));
    for (std::int64_t c = 0; c < n; ++c) y[c] = (x[c * st] - m) - lse;
  } else {
    for (std::int64_t c = 0; c < n; ++c) {
      const T e = std::exp(x[c * st] - m);
      y[c] = e;
      s += static_cast<double>(e);
    }
    const T inv = static_cast<T>(1.0 / s);
    for (std::int64_t c = 0; c < n; ++c) y[c] *= inv;
  }
}

// Columns [i0, i0 + cnt) of block `o`; y points at out[o, 0, i0] (contiguous, row pitch `inner`).
template <typename T>
void forward_tile(const T* xb, const DimView& v, std::int64_t cnt, T* y, bool log) {
  const std::int64_t C = v.size, cs = v.size_stride, is = v.inner_stride, pitch = v.inner;
  T mx[kTile];
  double sm[kTile];
  for (std::int64_t i = 0; i < cnt; ++i) mx[i] = xb[i * is];
  for (std::int64_t c = 1; c < C; ++c) {
    const T* xc = xb + c * cs;
    for (std::int64_t i = 0; i < cnt; ++i) mx[i] = max_of(mx[i], xc[i * is]);
  }
  for (std::int64_t i = 0; i < cnt; ++i) sm[i] = 0;
  if (log) {
    for (std::int64_t c = 0; c < C; ++c) {
      const T* xc = xb + c * cs;
      for (std::int64_t i = 0; i < cnt; ++i)
        sm[i] += static_cast<double>(std::exp(xc[i * is] - mx[i]));
    }
    T lse[kTile];
    for (std::int64_t i = 0; i < cnt; ++i) lse[i] = static_cast<T>(std::log(sm[i]));
    for (std::int64_t c = 0; c < C; ++c) {
      const T* xc = xb + c * cs;
      T* yc = y + c * pitch;
      for (std::int64_t i = 0; i < cnt; ++i) yc[i] = (xc[i * is] - mx[i]) - lse[i];
    }
  } else {
    for (std::int64_t c = 0; c < C; ++c) {
      const T* xc = xb + c * cs;
      T* yc = y + c * pitch;
      for (std::int64_t i = 0; i < cnt; ++i) {
        const T e = std::exp(xc[i * is] - mx[i]);
        yc[i] = e;
        sm[i] += static_cast<double>(e);
      }
    }
    T inv[kTile];
    for (std::int64_t i = 0; i < cnt; ++i) inv[i] = static_cast<T>(1.0 / sm[i]);
    for (std::int64_t c = 0; c < C; ++c) {
      T* yc = y + c * pitch;
      for (std::int64_t i = 0; i < cnt; ++i) yc[i] *= inv[i];
    }
  }
}

// ---- backward ----

template <typename T>
void backward_row(const T* g, std::int64_t n, std::int64_t st, const T* y, T* gx, bool log) {
  double s = 0;
  if (log) {
    for (std::int64_t c = 0; c < n; ++c) s += static_cast<double>(g[c * st]);
    const T sum = static_cast<T>(s);
    for (std::int64_t c = 0; c < n; ++c) gx[c] = g[c * st] - std::exp(y[c]) * sum;
  } else {
    for (std::int64_t c = 0; c < n; ++c) s += static_cast<double>(g[c * st] * y[c]);
    const T dot = static_cast<T>(s);
    for (std::int64_t c = 0; c < n; ++c) gx[c] = y[c] * (g[c * st] - dot);
  }
}

template <typename T>
void backward_tile(const T* gb, const DimView& v, std::int64_t cnt, const T* y, T* gx, bool log) {
  const std::int64_t C = v.size, cs = v.size_stride, is = v.inner_stride, pitch = v.inner;
  double acc[kTile];
  for (std::int64_t i = 0; i < cnt; ++i) acc[i] = 0;
  T s[kTile];
  if (log) {
    for (std::int64_t c = 0; c < C; ++c) {
      const T* gc = gb + c * cs;
      for (std::int64_t i = 0; i < cnt; ++i) acc[i] += static_cast<double>(gc[i * is]);
    }
    for (std::int64_t i = 0; i < cnt; ++i) s[i] = static_cast<T>(acc[i]);
    for (std::int64_t c = 0; c < C; ++c) {
      const T* gc = gb + c * cs;
      const T* yc = y + c * pitch;
      T* oc = gx + c * pitch;
      for (std::int64_t i = 0; i < cnt; ++i) oc[i] = gc[i * is] - std::exp(yc[i]) * s[i];
    }
  } else {
    for (std::int64_t c = 0; c < C; ++c) {
      const T* gc = gb + c * cs;
      const T* yc = y + c * pitch;
      for (std::int64_t i = 0; i < cnt; ++i) acc[i] += static_cast<double>(gc[i * is] * yc[i]);
    }
    for (std::int64_t i = 0; i < cnt; ++i) s[i] = static_cast<T>(acc[i]);
    for (std::int64_t c = 0; c < C; ++c) {
      const T* gc = gb + c * cs;
      const T* yc = y + c * pitch;
      T* oc = gx + c * pitch;
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

}  // namespace

void softmax_cpu(const Tensor& x, std::int64_t dim, bool log, const Tensor& out) {
  if (out.numel() == 0) return;
  Tensor xs;
  const DimView v = dim_view_or_copy(x, dim, xs);
  QGRAD_DISPATCH_FLOAT(x.dtype(), log ? "log_softmax" : "softmax", [&] {
    using T = scalar_t;
    const T* px = static_cast<const T*>(xs.raw_data());
    T* py = out.data_ptr<T>();
    const std::int64_t block = v.size * v.inner;  // elements per outer block of `out`
    for_each_job(v, [&](std::int64_t o, std::int64_t i0, std::int64_t cnt) {
      const T* xb = px + o * v.outer_stride + i0 * v.inner_stride;
      T* yb = py + o * block + i0;
      if (v.inner == 1)
        forward_row(xb, v.size, v.size_stride, yb, log);
      else
        forward_tile(xb, v, cnt, yb, log);
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
    for_each_job(v, [&](std::int64_t o, std::int64_t i0, std::int64_t cnt) {
      const T* gb = pg + o * v.outer_stride + i0 * v.inner_stride;
      const std::int64_t off = o * block + i0;
      if (v.inner == 1)
        backward_row(gb, v.size, v.size_stride, py + off, po + off, log);
      else
        backward_tile(gb, v, cnt, py + off, po + off, log);
    });
  });
}

}  // namespace qgrad
