// CPU loss kernels. Cross entropy makes short passes over each position's C logits: max, then
// sum(exp(x - max)) (and, with label smoothing, sum(weight * (x - max))), vectorised with the
// softmax family's exp and blocked sums (core/vec_math.h). They give the loss and the
// position's log-sum-exp, which the backward pass reuses to recompute the softmax without
// storing it. [N, C] inputs run position by position along their class rows; spatial inputs
// [N, C, d1, ...] run a tile of neighbouring positions at once, so each pass over the classes
// walks contiguous memory. Work is split across threads; the totals are summed afterwards in
// position order, independent of the thread count.
#include "ops/loss/loss_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/strided_loop.h"
#include "core/vec_math.h"
#include "ops/loss/loss_elem.h"
#include "ops/softmax/dim_view.h"

namespace qgrad {

namespace {

template <typename T>
struct ClassRows {
  const T* x;
  DimView v;
  const T* row(std::int64_t pos) const {
    const std::int64_t n = pos / v.inner, s = pos % v.inner;
    return x + n * v.outer_stride + s * v.inner_stride;
  }
};

// Max m, log(sum(exp(x - m))) and, when `smooth`, sum(w_c * (x_c - m)) of one position's C
// logits at stride st (compile-time 1 when kUnit).
template <bool kUnit, typename T>
void log_sum_exp(const T* x, std::int64_t C, std::int64_t st, const T* w, bool smooth,
                 double& max_out, double& log_s, double& sw) {
  const std::int64_t s1 = kUnit ? 1 : st;
  T m = x[0];
#pragma omp simd reduction(max : m)
  for (std::int64_t c = 1; c < C; ++c) m = x[c * s1] > m ? x[c * s1] : m;
  max_out = static_cast<double>(m);
  log_s = std::log(vec_math::blocked_sum<T>(
      C, [&](std::int64_t c) { return vec_math::exp_nonpositive(static_cast<T>(x[c * s1] - m)); }));
  if (!smooth) return;
  if (w)
    sw = vec_math::blocked_sum<T>(C, [&](std::int64_t c) { return w[c] * (x[c * s1] - m); });
  else
    sw = vec_math::blocked_sum<T>(C, [&](std::int64_t c) { return x[c * s1] - m; });
}

// gr[c] = coef_p * exp(x_c - lse) - coef_w * w_c over one position (gr at pitch `pitch`).
template <bool kUnit, typename T>
void softmax_grad_row(const T* x, std::int64_t C, std::int64_t st, std::int64_t pitch, double lse,
                      T coef_p, T coef_w, const T* w, T* gr) {
  const std::int64_t s1 = kUnit ? 1 : st, p1 = kUnit ? 1 : pitch;
  if (w) {
#pragma omp simd
    for (std::int64_t c = 0; c < C; ++c)
      gr[c * p1] =
          coef_p * vec_math::exp_nonpositive(static_cast<T>(static_cast<double>(x[c * s1]) - lse)) -
          coef_w * w[c];
  } else {
#pragma omp simd
    for (std::int64_t c = 0; c < C; ++c)
      gr[c * p1] =
          coef_p * vec_math::exp_nonpositive(static_cast<T>(static_cast<double>(x[c * s1]) - lse)) -
          coef_w;
  }
}

template <typename T>
double weight_total(const T* w, std::int64_t C) {
  if (!w) return static_cast<double>(C);
  double s = 0;
  for (std::int64_t c = 0; c < C; ++c) s += static_cast<double>(w[c]);
  return s;
}

// Everything the kernels need about one call, resolved once.
template <typename T>
struct ClassLossCtx {
  ClassRows<T> rows;
  std::int64_t C, cs, S;  // classes, class stride of x, positions per sample
  const std::int64_t* tgt;
  const T* w;  // null: all weights 1
  double eps, w_all;
  std::int64_t ignore;
  double weight_of(std::int64_t t) const { return w ? static_cast<double>(w[t]) : 1.0; }
  T class_weight(std::int64_t c) const { return w ? w[c] : T(1); }
  // Cross entropy of a non-ignored position from its max, log(sum(exp(x - max))) and, with
  // smoothing, sum_c w_c (x_c - max): (1 - eps) nll + eps / C * sum_c -w_c log_softmax_c.
  double loss(T x_t, double md, double log_s, double sw, double wt) const {
    return loss_elem::cross_entropy(static_cast<double>(x_t), md, log_s, sw, wt, eps,
                                    static_cast<double>(C), w_all);
  }
};

constexpr std::int64_t kClassTile = 256;

// Cross entropy of positions [s0, s0 + cnt) of sample n, processed together: each pass over the
// classes runs along the tile's contiguous positions (spatial inputs [N, C, d1, ...]).
template <bool kUnit, typename T>
void ce_forward_tile(const ClassLossCtx<T>& k, std::int64_t n, std::int64_t s0, std::int64_t cnt,
                     double* out, double* plse) {
  const DimView& v = k.rows.v;
  const std::int64_t is = kUnit ? 1 : v.inner_stride;
  const T* xb = k.rows.x + n * v.outer_stride + s0 * v.inner_stride;
  const bool smooth = k.eps > 0;
  T mx[kClassTile], part[kClassTile], partw[kClassTile];
  double sm[kClassTile], sw[kClassTile];
  for (std::int64_t i = 0; i < cnt; ++i) {
    mx[i] = xb[i * is];
    part[i] = partw[i] = 0;
    sm[i] = sw[i] = 0;
  }
  for (std::int64_t c = 1; c < k.C; ++c) {
    const T* xc = xb + c * k.cs;
#pragma omp simd
    for (std::int64_t i = 0; i < cnt; ++i) mx[i] = xc[i * is] > mx[i] ? xc[i * is] : mx[i];
  }
  for (std::int64_t c = 0; c < k.C; ++c) {
    const T* xc = xb + c * k.cs;
#pragma omp simd
    for (std::int64_t i = 0; i < cnt; ++i)
      part[i] += vec_math::exp_nonpositive(static_cast<T>(xc[i * is] - mx[i]));
    if (smooth) {
      const T wc = k.class_weight(c);
#pragma omp simd
      for (std::int64_t i = 0; i < cnt; ++i) partw[i] += wc * (xc[i * is] - mx[i]);
    }
    if ((c + 1) % vec_math::kSumBlock == 0 || c + 1 == k.C) {
      for (std::int64_t i = 0; i < cnt; ++i) {
        sm[i] += static_cast<double>(part[i]);
        sw[i] += static_cast<double>(partw[i]);
        part[i] = partw[i] = 0;
      }
    }
  }
  for (std::int64_t i = 0; i < cnt; ++i) {
    const std::int64_t pos = n * k.S + s0 + i, t = k.tgt[pos];
    if (t == k.ignore) {
      out[pos] = plse[pos] = 0;
      continue;
    }
    const double md = static_cast<double>(mx[i]), log_s = std::log(sm[i]);
    plse[pos] = md + log_s;
    out[pos] = k.loss(xb[t * k.cs + i * is], md, log_s, sw[i], k.weight_of(t));
  }
}

// Backward of ce_forward_tile: gb points at grad_in[n, 0, s0] (class pitch S).
template <bool kUnit, typename T>
void ce_backward_tile(const ClassLossCtx<T>& k, std::int64_t n, std::int64_t s0, std::int64_t cnt,
                      const double* plse, const double* sc_of, T* gb) {
  const DimView& v = k.rows.v;
  const std::int64_t is = kUnit ? 1 : v.inner_stride;
  const T* xb = k.rows.x + n * v.outer_stride + s0 * v.inner_stride;
  const double eps_c = k.eps / static_cast<double>(k.C);
  double l[kClassTile];
  T coef_p[kClassTile], coef_w[kClassTile];
  bool ignored[kClassTile];
  for (std::int64_t i = 0; i < cnt; ++i) {
    const std::int64_t pos = n * k.S + s0 + i, t = k.tgt[pos];
    ignored[i] = t == k.ignore;
    const double sc = ignored[i] ? 0.0 : sc_of[i];
    const double wt = ignored[i] ? 0.0 : k.weight_of(t);
    // An ignored position gets coefficients 0 and lse = +inf, so exp(x - lse) = 0 and its
    // gradient is 0 without a branch in the vector loop below.
    l[i] = ignored[i] ? std::numeric_limits<double>::infinity() : plse[pos];
    coef_p[i] = static_cast<T>(sc * ((1.0 - k.eps) * wt + eps_c * k.w_all));
    coef_w[i] = static_cast<T>(sc * eps_c);
  }
  for (std::int64_t c = 0; c < k.C; ++c) {
    const T* xc = xb + c * k.cs;
    T* gc = gb + c * k.S;
    const T wc = k.class_weight(c);
#pragma omp simd
    for (std::int64_t i = 0; i < cnt; ++i) {
      const T prob =
          vec_math::exp_nonpositive(static_cast<T>(static_cast<double>(xc[i * is]) - l[i]));
      gc[i] = coef_p[i] * prob - coef_w[i] * wc;
    }
  }
  for (std::int64_t i = 0; i < cnt; ++i) {
    if (ignored[i]) continue;
    const std::int64_t t = k.tgt[n * k.S + s0 + i];
    gb[t * k.S + i] -= static_cast<T>(sc_of[i] * (1.0 - k.eps) * k.weight_of(t));
  }
}

// Runs body(n, s0, cnt) over every (sample, position tile) job, in parallel when large.
template <typename F>
void for_each_tile(std::int64_t N, std::int64_t S, std::int64_t C, F&& body) {
  const std::int64_t tile = std::min(kClassTile, S);
  const std::int64_t tiles = (S + tile - 1) / tile;
  const std::int64_t grain =
      std::max<std::int64_t>(1, kParallelGrain / std::max<std::int64_t>(1, C * tile));
  parallel_for(N * tiles, grain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t j = b; j < e; ++j) {
      const std::int64_t s0 = (j % tiles) * tile;
      body(j / tiles, s0, std::min(tile, S - s0));
    }
  });
}

template <typename T>
ClassLossCtx<T> make_ctx(const Tensor& input, Tensor& storage, const Tensor& target,
                         const Tensor& weight, const ClassLossParams& p) {
  ClassLossCtx<T> k{{nullptr, dim_view_or_copy(input, 1, storage)},
                    0,
                    0,
                    0,
                    nullptr,
                    nullptr,
                    p.label_smoothing,
                    0,
                    p.ignore_index};
  k.rows.x = static_cast<const T*>(storage.raw_data());
  k.C = k.rows.v.size;
  k.cs = k.rows.v.size_stride;
  k.S = k.rows.v.inner;
  k.tgt = target.data_ptr<std::int64_t>();
  k.w = weight.defined() ? weight.data_ptr<T>() : nullptr;
  k.w_all = weight_total(k.w, k.C);
  return k;
}

struct ClassLossTotals {
  double loss_sum = 0;    // sum of the per-position losses
  double weight_sum = 0;  // sum of weight[target] over the non-ignored positions
};

template <typename T>
ClassLossTotals class_loss_typed(const Tensor& input, const Tensor& target, const Tensor& weight,
                                 const ClassLossParams& p, const Tensor& losses,
                                 const Tensor& lse) {
  Tensor xs;
  const ClassLossCtx<T> k = make_ctx<T>(input, xs, target, weight, p);
  const std::int64_t C = k.C, cs = k.cs, N = k.rows.v.outer, P = N * k.S;
  double* out = losses.data_ptr<double>();
  double* plse = lse.defined() ? lse.data_ptr<double>() : nullptr;

  if (p.from_logits && k.S > 1) {
    const bool unit = k.rows.v.inner_stride == 1;
    for_each_tile(N, k.S, C, [&](std::int64_t n, std::int64_t s0, std::int64_t cnt) {
      if (unit)
        ce_forward_tile<true>(k, n, s0, cnt, out, plse);
      else
        ce_forward_tile<false>(k, n, s0, cnt, out, plse);
    });
  } else {
    const std::int64_t grain =
        std::max<std::int64_t>(1, kParallelGrain / std::max<std::int64_t>(C, 1));
    parallel_for(P, grain, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t pos = b; pos < e; ++pos) {
        const std::int64_t t = k.tgt[pos];
        if (t == p.ignore_index) {
          out[pos] = 0;
          if (plse) plse[pos] = 0;
          continue;
        }
        const T* xr = k.rows.row(pos);
        const double wt = k.weight_of(t);
        if (!p.from_logits) {
          out[pos] = -wt * static_cast<double>(xr[t * cs]);
          continue;
        }
        double log_s = 0, md = 0, sw = 0;
        if (cs == 1)
          log_sum_exp<true>(xr, C, 1, k.w, k.eps > 0, md, log_s, sw);
        else
          log_sum_exp<false>(xr, C, cs, k.w, k.eps > 0, md, log_s, sw);
        plse[pos] = md + log_s;
        out[pos] = k.loss(xr[t * cs], md, log_s, sw, wt);
      }
    });
  }

  ClassLossTotals tot;
  for (std::int64_t pos = 0; pos < P; ++pos) {
    const std::int64_t t = k.tgt[pos];
    if (t == p.ignore_index) continue;
    tot.loss_sum += out[pos];
    tot.weight_sum += k.weight_of(t);
  }
  return tot;
}

template <typename T>
void class_loss_backward_typed(const Tensor& input, const Tensor& target, const Tensor& weight,
                               const Tensor& lse, const ClassLossParams& p, const Tensor& g,
                               double factor, const Tensor& grad_in) {
  Tensor xs;
  const ClassLossCtx<T> k = make_ctx<T>(input, xs, target, weight, p);
  const std::int64_t C = k.C, cs = k.cs, S = k.S, N = k.rows.v.outer, P = N * S;
  const double* plse = lse.defined() ? lse.data_ptr<double>() : nullptr;
  const T* pg = g.data_ptr<T>();
  const bool shared_g = g.numel() == 1;
  T* gx = grad_in.data_ptr<T>();
  const double eps = p.label_smoothing;
  const double eps_c = eps / static_cast<double>(C);
  auto scale = [&](std::int64_t pos) {
    return factor * static_cast<double>(shared_g ? pg[0] : pg[pos]);
  };

  if (p.from_logits && S > 1) {
    const bool unit = k.rows.v.inner_stride == 1;
    for_each_tile(N, S, C, [&](std::int64_t n, std::int64_t s0, std::int64_t cnt) {
      double sc[kClassTile];
      for (std::int64_t i = 0; i < cnt; ++i) sc[i] = scale(n * S + s0 + i);
      T* gb = gx + n * C * S + s0;
      if (unit)
        ce_backward_tile<true>(k, n, s0, cnt, plse, sc, gb);
      else
        ce_backward_tile<false>(k, n, s0, cnt, plse, sc, gb);
    });
    return;
  }
  const std::int64_t grain =
      std::max<std::int64_t>(1, kParallelGrain / std::max<std::int64_t>(C, 1));
  parallel_for(P, grain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t pos = b; pos < e; ++pos) {
      const std::int64_t t = k.tgt[pos];
      T* gr = gx + (pos / S) * C * S + pos % S;  // grad_in[n, 0, s]; class pitch S
      if (t == p.ignore_index) {
        if (p.from_logits)
          for (std::int64_t c = 0; c < C; ++c) gr[c * S] = T(0);
        continue;
      }
      const double sc = scale(pos);
      const double wt = k.weight_of(t);
      if (!p.from_logits) {
        gr[t * S] = static_cast<T>(-sc * wt);
        continue;
      }
      // d loss / d x_c = sc * (softmax_c * A - a_c), a_c = (1-eps) wt [c == t] + eps/C w_c.
      const T* xr = k.rows.row(pos);
      const double l = plse[pos];
      const T coef_p = static_cast<T>(sc * ((1.0 - eps) * wt + eps_c * k.w_all));
      const T coef_w = static_cast<T>(sc * eps_c);
      if (cs == 1 && S == 1)
        softmax_grad_row<true>(xr, C, 1, 1, l, coef_p, coef_w, k.w, gr);
      else
        softmax_grad_row<false>(xr, C, cs, S, l, coef_p, coef_w, k.w, gr);
      gr[t * S] -= static_cast<T>(sc * (1.0 - eps) * wt);
    }
  });
}

constexpr std::int64_t kMseBlock = 16384;

template <typename T>
double mse_sum_typed(const Tensor& a, const Tensor& b) {
  const Tensor ac = a.contiguous(), bc = b.contiguous();
  const T* pa = ac.data_ptr<T>();
  const T* pb = bc.data_ptr<T>();
  const std::int64_t n = a.numel();
  const std::int64_t blocks = (n + kMseBlock - 1) / kMseBlock;
  std::vector<double> partial(static_cast<std::size_t>(blocks), 0.0);
  parallel_for(blocks, 2, [&](std::int64_t b0, std::int64_t b1) {
    for (std::int64_t k = b0; k < b1; ++k) {
      const std::int64_t i0 = k * kMseBlock, i1 = std::min(n, i0 + kMseBlock);
      double s[4] = {0, 0, 0, 0};
      std::int64_t i = i0;
      for (; i + 4 <= i1; i += 4)
        for (int j = 0; j < 4; ++j) {
          const T d = pa[i + j] - pb[i + j];
          s[j] += static_cast<double>(d * d);
        }
      for (; i < i1; ++i) {
        const T d = pa[i] - pb[i];
        s[0] += static_cast<double>(d * d);
      }
      partial[static_cast<std::size_t>(k)] = (s[0] + s[1]) + (s[2] + s[3]);
    }
  });
  double total = 0;
  for (double v : partial) total += v;
  return total;
}

template <typename T>
void mse_elementwise_typed(const Tensor& a, const Tensor& b, const Tensor& out) {
  const T* pa = static_cast<const T*>(a.raw_data());
  const T* pb = static_cast<const T*>(b.raw_data());
  T* po = static_cast<T*>(out.raw_data());
  StridedLoop<3> loop(out.shape(), {out.strides(), a.strides(), b.strides()}, {0, 0, 0});
  loop.run([&](const std::array<std::int64_t, 3>& off, std::int64_t n,
               const std::array<std::int64_t, 3>& st) {
    T* o = po + off[0];
    const T* x = pa + off[1];
    const T* y = pb + off[2];
    for (std::int64_t i = 0; i < n; ++i) {
      o[i * st[0]] = loss_elem::SquaredDiff<T>{}(x[i * st[1]], y[i * st[2]]);
    }
  });
}

template <typename T>
void mse_backward_typed(const Tensor& a, const Tensor& b, const Tensor& g, double factor,
                        const Tensor& ga) {
  const T* pa = static_cast<const T*>(a.raw_data());
  const T* pb = static_cast<const T*>(b.raw_data());
  const T* pg = static_cast<const T*>(g.raw_data());
  T* po = static_cast<T*>(ga.raw_data());
  const loss_elem::MseGrad<T> grad{static_cast<T>(factor)};
  StridedLoop<4> loop(ga.shape(), {ga.strides(), a.strides(), b.strides(), g.strides()},
                      {0, 0, 0, 0});
  loop.run([&](const std::array<std::int64_t, 4>& off, std::int64_t n,
               const std::array<std::int64_t, 4>& st) {
    T* o = po + off[0];
    const T* x = pa + off[1];
    const T* y = pb + off[2];
    const T* d = pg + off[3];
    for (std::int64_t i = 0; i < n; ++i)
      o[i * st[0]] = grad(x[i * st[1]], y[i * st[2]], d[i * st[3]]);
  });
}

void class_loss_cpu(const Tensor& input, const Tensor& target, const Tensor& weight,
                    const ClassLossParams& p, const Tensor& losses, const Tensor& lse,
                    const Tensor& totals) {
  const ClassLossTotals tot = QGRAD_DISPATCH_FLOAT(
      input.dtype(), p.from_logits ? "cross_entropy" : "nll_loss",
      [&] { return class_loss_typed<scalar_t>(input, target, weight, p, losses, lse); });
  double* t = totals.data_ptr<double>();
  t[0] = tot.loss_sum;
  t[1] = tot.weight_sum;
}

void class_loss_backward_cpu(const Tensor& input, const Tensor& target, const Tensor& weight,
                             const Tensor& lse, const ClassLossParams& p, const Tensor& g,
                             const Tensor& factor, const Tensor& grad_in) {
  if (grad_in.numel() == 0) return;
  const double f = factor.defined() ? factor.data_ptr<double>()[0] : 1.0;
  QGRAD_DISPATCH_FLOAT(input.dtype(), p.from_logits ? "cross_entropy" : "nll_loss", [&] {
    class_loss_backward_typed<scalar_t>(input, target, weight, lse, p, g, f, grad_in);
  });
}

void mse_cpu(const Tensor& a, const Tensor& b, const Tensor& out, const Tensor& total) {
  QGRAD_DISPATCH_FLOAT(a.dtype(), "mse_loss", [&] {
    if (out.defined()) {
      if (out.numel() > 0) mse_elementwise_typed<scalar_t>(a, b, out);
    } else {
      total.data_ptr<double>()[0] = mse_sum_typed<scalar_t>(a, b);
    }
  });
}

void mse_backward_cpu(const Tensor& a, const Tensor& b, const Tensor& g, double factor,
                      const Tensor& grad_a) {
  if (grad_a.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(a.dtype(), "mse_loss backward",
                       [&] { mse_backward_typed<scalar_t>(a, b, g, factor, grad_a); });
}

}  // namespace

void register_loss_cpu_kernels(KernelRegistry& r) {
  r.table(kClassLossKernels).define(DeviceType::CPU, &class_loss_cpu, kFloatingDTypes);
  r.table(kClassLossBackwardKernels)
      .define(DeviceType::CPU, &class_loss_backward_cpu, kFloatingDTypes);
  r.table(kMseLossKernels).define(DeviceType::CPU, &mse_cpu, kFloatingDTypes);
  r.table(kMseLossBackwardKernels).define(DeviceType::CPU, &mse_backward_cpu, kFloatingDTypes);
}

}  // namespace qgrad
