// CPU loss kernels. Cross entropy makes short passes per position over its C logits: max, then
// sum(exp(x - max)) (and, with label smoothing, sum(weight * (x - max))), vectorised with the
// softmax family's exp and blocked sums (ops/softmax/vec_math.h). They give the loss and the
// position's log-sum-exp, which the backward pass reuses to recompute the softmax without
// storing it. Positions are split across threads; totals are summed afterwards in order.
#include "ops/loss/loss_cpu.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/strided_loop.h"
#include "ops/softmax/dim_view.h"
#include "ops/softmax/vec_math.h"

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
  log_s = std::log(blocked_sum<T>(
      C, [&](std::int64_t c) { return exp_nonpositive(static_cast<T>(x[c * s1] - m)); }));
  if (!smooth) return;
  if (w)
    sw = blocked_sum<T>(C, [&](std::int64_t c) { return w[c] * (x[c * s1] - m); });
  else
    sw = blocked_sum<T>(C, [&](std::int64_t c) { return x[c * s1] - m; });
}

// gr[c] = coef_p * exp(x_c - lse) - coef_w * w_c over one position (gr at pitch `pitch`).
template <bool kUnit, typename T>
void softmax_grad_row(const T* x, std::int64_t C, std::int64_t st, std::int64_t pitch, double lse,
                      T coef_p, T coef_w, const T* w, T* gr) {
  const std::int64_t s1 = kUnit ? 1 : st, p1 = kUnit ? 1 : pitch;
  if (w) {
#pragma omp simd
    for (std::int64_t c = 0; c < C; ++c)
      gr[c * p1] = coef_p * exp_nonpositive(static_cast<T>(static_cast<double>(x[c * s1]) - lse)) -
                   coef_w * w[c];
  } else {
#pragma omp simd
    for (std::int64_t c = 0; c < C; ++c)
      gr[c * p1] =
          coef_p * exp_nonpositive(static_cast<T>(static_cast<double>(x[c * s1]) - lse)) - coef_w;
  }
}

template <typename T>
double weight_total(const T* w, std::int64_t C) {
  if (!w) return static_cast<double>(C);
  double s = 0;
  for (std::int64_t c = 0; c < C; ++c) s += static_cast<double>(w[c]);
  return s;
}

template <typename T>
ClassLossTotals class_loss_typed(const Tensor& input, const Tensor& target, const Tensor& weight,
                                 const ClassLossParams& p, const Tensor& losses,
                                 const Tensor& lse) {
  Tensor xs;
  ClassRows<T> rows{nullptr, dim_view_or_copy(input, 1, xs)};
  rows.x = static_cast<const T*>(xs.raw_data());
  const std::int64_t C = rows.v.size, cs = rows.v.size_stride;
  const std::int64_t P = rows.v.outer * rows.v.inner;
  const std::int64_t* tgt = target.data_ptr<std::int64_t>();
  const T* w = weight.defined() ? weight.data_ptr<T>() : nullptr;
  double* out = losses.data_ptr<double>();
  double* plse = lse.defined() ? lse.data_ptr<double>() : nullptr;
  const double eps = p.label_smoothing;
  const double w_all = weight_total(w, C);
  const std::int64_t grain =
      std::max<std::int64_t>(1, kParallelGrain / std::max<std::int64_t>(C, 1));

  parallel_for(P, grain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t pos = b; pos < e; ++pos) {
      const std::int64_t t = tgt[pos];
      if (t == p.ignore_index) {
        out[pos] = 0;
        if (plse) plse[pos] = 0;
        continue;
      }
      const T* xr = rows.row(pos);
      const double wt = w ? static_cast<double>(w[t]) : 1.0;
      if (!p.from_logits) {
        out[pos] = -wt * static_cast<double>(xr[t * cs]);
        continue;
      }
      double log_s = 0, md = 0, sw = 0;
      if (cs == 1)
        log_sum_exp<true>(xr, C, 1, w, eps > 0, md, log_s, sw);
      else
        log_sum_exp<false>(xr, C, cs, w, eps > 0, md, log_s, sw);
      plse[pos] = md + log_s;
      const double logp_t = (static_cast<double>(xr[t * cs]) - md) - log_s;
      double loss = -(1.0 - eps) * wt * logp_t;
      // sum_c w_c * log_softmax_c = sum_c w_c (x_c - m) - log(s) * sum_c w_c
      if (eps > 0) loss -= eps / static_cast<double>(C) * (sw - log_s * w_all);
      out[pos] = loss;
    }
  });

  ClassLossTotals tot;
  for (std::int64_t pos = 0; pos < P; ++pos) {
    const std::int64_t t = tgt[pos];
    if (t == p.ignore_index) continue;
    tot.loss_sum += out[pos];
    tot.weight_sum += w ? static_cast<double>(w[t]) : 1.0;
  }
  return tot;
}

template <typename T>
void class_loss_backward_typed(const Tensor& input, const Tensor& target, const Tensor& weight,
                               const Tensor& lse, const ClassLossParams& p, const Tensor& g,
                               double factor, const Tensor& grad_in) {
  Tensor xs;
  ClassRows<T> rows{nullptr, dim_view_or_copy(input, 1, xs)};
  rows.x = static_cast<const T*>(xs.raw_data());
  const std::int64_t C = rows.v.size, cs = rows.v.size_stride, S = rows.v.inner;
  const std::int64_t P = rows.v.outer * S;
  const std::int64_t* tgt = target.data_ptr<std::int64_t>();
  const T* w = weight.defined() ? weight.data_ptr<T>() : nullptr;
  const double* plse = lse.defined() ? lse.data_ptr<double>() : nullptr;
  const T* pg = g.data_ptr<T>();
  const bool shared_g = g.numel() == 1;
  T* gx = grad_in.data_ptr<T>();
  const double eps = p.label_smoothing;
  const double w_all = weight_total(w, C);
  const double eps_c = eps / static_cast<double>(C);
  const std::int64_t grain =
      std::max<std::int64_t>(1, kParallelGrain / std::max<std::int64_t>(C, 1));

  parallel_for(P, grain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t pos = b; pos < e; ++pos) {
      const std::int64_t t = tgt[pos];
      T* gr = gx + (pos / S) * C * S + pos % S;  // grad_in[n, 0, s]; class pitch S
      if (t == p.ignore_index) {
        if (p.from_logits)
          for (std::int64_t c = 0; c < C; ++c) gr[c * S] = T(0);
        continue;
      }
      const double sc = factor * static_cast<double>(shared_g ? pg[0] : pg[pos]);
      const double wt = w ? static_cast<double>(w[t]) : 1.0;
      if (!p.from_logits) {
        gr[t * S] = static_cast<T>(-sc * wt);
        continue;
      }
      // d loss / d x_c = sc * (softmax_c * A - a_c), a_c = (1-eps) wt [c == t] + eps/C w_c.
      const T* xr = rows.row(pos);
      const double l = plse[pos];
      const T coef_p = static_cast<T>(sc * ((1.0 - eps) * wt + eps_c * w_all));
      const T coef_w = static_cast<T>(sc * eps_c);
      if (cs == 1 && S == 1)
        softmax_grad_row<true>(xr, C, 1, 1, l, coef_p, coef_w, w, gr);
      else
        softmax_grad_row<false>(xr, C, cs, S, l, coef_p, coef_w, w, gr);
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
      const T d = x[i * st[1]] - y[i * st[2]];
      o[i * st[0]] = d * d;
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
  const T f = static_cast<T>(factor);
  StridedLoop<4> loop(ga.shape(), {ga.strides(), a.strides(), b.strides(), g.strides()},
                      {0, 0, 0, 0});
  loop.run([&](const std::array<std::int64_t, 4>& off, std::int64_t n,
               const std::array<std::int64_t, 4>& st) {
    T* o = po + off[0];
    const T* x = pa + off[1];
    const T* y = pb + off[2];
    const T* d = pg + off[3];
    for (std::int64_t i = 0; i < n; ++i)
      o[i * st[0]] = ((x[i * st[1]] - y[i * st[2]]) * f) * d[i * st[3]];
  });
}

}  // namespace

ClassLossTotals class_loss_cpu(const Tensor& input, const Tensor& target, const Tensor& weight,
                               const ClassLossParams& p, const Tensor& losses, const Tensor& lse) {
  return QGRAD_DISPATCH_FLOAT(input.dtype(), p.from_logits ? "cross_entropy" : "nll_loss", [&] {
    return class_loss_typed<scalar_t>(input, target, weight, p, losses, lse);
  });
}

void class_loss_backward_cpu(const Tensor& input, const Tensor& target, const Tensor& weight,
                             const Tensor& lse, const ClassLossParams& p, const Tensor& g,
                             double factor, const Tensor& grad_in) {
  if (grad_in.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(input.dtype(), p.from_logits ? "cross_entropy" : "nll_loss", [&] {
    class_loss_backward_typed<scalar_t>(input, target, weight, lse, p, g, factor, grad_in);
  });
}

double mse_cpu(const Tensor& a, const Tensor& b, const Tensor& out) {
  return QGRAD_DISPATCH_FLOAT(a.dtype(), "mse_loss", [&] {
    if (out.defined()) {
      if (out.numel() > 0) mse_elementwise_typed<scalar_t>(a, b, out);
      return 0.0;
    }
    return mse_sum_typed<scalar_t>(a, b);
  });
}

void mse_backward_cpu(const Tensor& a, const Tensor& b, const Tensor& g, double factor,
                      const Tensor& grad_a) {
  if (grad_a.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(a.dtype(), "mse_loss backward",
                       [&] { mse_backward_typed<scalar_t>(a, b, g, factor, grad_a); });
}

}  // namespace qgrad
