// CPU batch normalisation kernels, templated over float/double. Each channel's data is N
// contiguous runs of L elements; the per-run loops are SIMD reductions/maps (omp simd, since
// -ffp-contract=off and no fast-math keep the compiler from reassociating float sums on its
// own), run partial sums are accumulated in double, and channels are split across threads.
// Deviations are taken from the mean before scaling ((x - mean) * a + b rather than
// x * a + (b - mean * a)) so data with a large mean keeps its precision in float32.
// Not oneDNN: for plain NCHW data oneDNN 2.6 picks its non-JIT ncsp_bnorm, which measured
// ~8x slower than this kernel on the forward of [128, 32, 28, 28] (single thread).
#include "ops/batch_norm/batch_norm_kernels.h"

#include <algorithm>
#include <cmath>

#include "core/strided_loop.h"

namespace qgrad {

namespace {

struct Dims {
  std::int64_t n, c, l;
};

Dims dims_of(const Tensor& x) {
  return {x.size(0), x.size(1), x.size(2)};
}

// Channels per thread chunk: parallel only when there is enough data.
std::int64_t channel_grain(const Dims& d) {
  return std::max<std::int64_t>(1, kParallelGrain / std::max<std::int64_t>(d.n * d.l, 1));
}

template <typename T>
T run_sum(const T* x, std::int64_t n) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (std::int64_t i = 0; i < n; ++i) s += x[i];
  return s;
}

template <typename T>
T run_squared_deviation(const T* x, std::int64_t n, T m) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (std::int64_t i = 0; i < n; ++i) {
    const T d = x[i] - m;
    s += d * d;
  }
  return s;
}

// sum of g and of g * (x - m) over one run.
template <typename T>
void run_grad_sums(const T* g, const T* x, std::int64_t n, T m, T& sg, T& sgx) {
  T a = 0, b = 0;
#pragma omp simd reduction(+ : a, b)
  for (std::int64_t i = 0; i < n; ++i) {
    a += g[i];
    b += g[i] * (x[i] - m);
  }
  sg = a;
  sgx = b;
}

template <typename T>
T param_or(const Tensor& t, std::int64_t c, T fallback) {
  return t.defined() ? t.data_ptr<T>()[c] : fallback;
}

template <typename T>
void train_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                   const Tensor& y, const Tensor& mean, const Tensor& var) {
  const Dims d = dims_of(x);
  const T* px = x.data_ptr<T>();
  T* py = y.data_ptr<T>();
  T* pm = mean.data_ptr<T>();
  T* pv = var.data_ptr<T>();
  const double count = static_cast<double>(d.n * d.l);
  parallel_for(d.c, channel_grain(d), [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      double sum = 0;
      for (std::int64_t n = 0; n < d.n; ++n) sum += run_sum(px + (n * d.c + c) * d.l, d.l);
      const T m = static_cast<T>(sum / count);
      double sq = 0;
      for (std::int64_t n = 0; n < d.n; ++n)
        sq += run_squared_deviation(px + (n * d.c + c) * d.l, d.l, m);
      const double v = sq / count;
      pm[c] = m;
      pv[c] = static_cast<T>(v);
      const T a = static_cast<T>(1.0 / std::sqrt(v + eps)) * param_or<T>(weight, c, T(1));
      const T b = param_or<T>(bias, c, T(0));
      for (std::int64_t n = 0; n < d.n; ++n) {
        const T* xr = px + (n * d.c + c) * d.l;
        T* yr = py + (n * d.c + c) * d.l;
#pragma omp simd
        for (std::int64_t i = 0; i < d.l; ++i) yr[i] = (xr[i] - m) * a + b;
      }
    }
  });
}

template <typename T>
void eval_forward(const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& weight,
                  const Tensor& bias, double eps, const Tensor& y) {
  const Dims d = dims_of(x);
  const T* px = x.data_ptr<T>();
  T* py = y.data_ptr<T>();
  const T* pm = mean.data_ptr<T>();
  const T* pv = var.data_ptr<T>();
  parallel_for(d.c, channel_grain(d), [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const T m = pm[c];
      const T a = static_cast<T>(1.0 / std::sqrt(static_cast<double>(pv[c]) + eps)) *
                  param_or<T>(weight, c, T(1));
      const T b = param_or<T>(bias, c, T(0));
      for (std::int64_t n = 0; n < d.n; ++n) {
        const T* xr = px + (n * d.c + c) * d.l;
        T* yr = py + (n * d.c + c) * d.l;
#pragma omp simd
        for (std::int64_t i = 0; i < d.l; ++i) yr[i] = (xr[i] - m) * a + b;
      }
    }
  });
}

template <typename T>
void update_running(const Tensor& running_mean, const Tensor& running_var, const Tensor& mean,
                    const Tensor& var, double momentum, std::int64_t count) {
  const std::int64_t channels = mean.numel();
  const T* pm = mean.data_ptr<T>();
  const T* pv = var.data_ptr<T>();
  const double unbias = static_cast<double>(count) / static_cast<double>(count - 1);
  if (running_mean.defined()) {
    T* r = running_mean.data_ptr<T>();
    const std::int64_t s = running_mean.stride(0);
    for (std::int64_t c = 0; c < channels; ++c)
      r[c * s] = static_cast<T>(momentum * static_cast<double>(pm[c]) +
                                (1 - momentum) * static_cast<double>(r[c * s]));
  }
  if (running_var.defined()) {
    T* r = running_var.data_ptr<T>();
    const std::int64_t s = running_var.stride(0);
    for (std::int64_t c = 0; c < channels; ++c)
      r[c * s] = static_cast<T>(momentum * static_cast<double>(pv[c]) * unbias +
                                (1 - momentum) * static_cast<double>(r[c * s]));
  }
}

template <typename T>
void backward(const Tensor& gy, const Tensor& x, const Tensor& mean, const Tensor& var,
              const Tensor& weight, double eps, bool training, const Tensor& gx, const Tensor& gw,
              const Tensor& gb) {
  const Dims d = dims_of(x);
  const T* pg = gy.data_ptr<T>();
  const T* px = x.data_ptr<T>();
  const T* pm = mean.data_ptr<T>();
  const T* pv = var.data_ptr<T>();
  T* pgx = gx.defined() ? gx.data_ptr<T>() : nullptr;
  T* pgw = gw.defined() ? gw.data_ptr<T>() : nullptr;
  T* pgb = gb.defined() ? gb.data_ptr<T>() : nullptr;
  const double count = static_cast<double>(d.n * d.l);
  // Eval-mode gx needs no reduction.
  const bool need_sums = pgw || pgb || (pgx && training);
  parallel_for(d.c, channel_grain(d), [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const T m = pm[c];
      const double invstd = 1.0 / std::sqrt(static_cast<double>(pv[c]) + eps);
      double sum_g = 0, sum_gx = 0;
      if (need_sums) {
        for (std::int64_t n = 0; n < d.n; ++n) {
          T a, b;
          run_grad_sums(pg + (n * d.c + c) * d.l, px + (n * d.c + c) * d.l, d.l, m, a, b);
          sum_g += a;
          sum_gx += b;
        }
      }
      if (pgw) pgw[c] = static_cast<T>(sum_gx * invstd);
      if (pgb) pgb[c] = static_cast<T>(sum_g);
      if (!pgx) continue;
      const T scale = static_cast<T>(invstd) * param_or<T>(weight, c, T(1));
      if (training) {
        // gx = (g - mean(g) - (x - mean) * k) * invstd * w, k = mean(g * (x - mean)) / (var + eps)
        const T gmean = static_cast<T>(sum_g / count);
        const T k = static_cast<T>(sum_gx / count * invstd * invstd);
        for (std::int64_t n = 0; n < d.n; ++n) {
          const T* gr = pg + (n * d.c + c) * d.l;
          const T* xr = px + (n * d.c + c) * d.l;
          T* o = pgx + (n * d.c + c) * d.l;
#pragma omp simd
          for (std::int64_t i = 0; i < d.l; ++i) o[i] = (gr[i] - gmean - (xr[i] - m) * k) * scale;
        }
      } else {
        for (std::int64_t n = 0; n < d.n; ++n) {
          const T* gr = pg + (n * d.c + c) * d.l;
          T* o = pgx + (n * d.c + c) * d.l;
#pragma omp simd
          for (std::int64_t i = 0; i < d.l; ++i) o[i] = gr[i] * scale;
        }
      }
    }
  });
}

void batch_norm_train_cpu(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                          const Tensor& y, const Tensor& mean, const Tensor& var) {
  QGRAD_DISPATCH_FLOAT(x.dtype(), "batch_norm",
                       [&] { train_forward<scalar_t>(x, weight, bias, eps, y, mean, var); });
}

void batch_norm_eval_cpu(const Tensor& x, const Tensor& mean, const Tensor& var,
                         const Tensor& weight, const Tensor& bias, double eps, const Tensor& y) {
  QGRAD_DISPATCH_FLOAT(x.dtype(), "batch_norm",
                       [&] { eval_forward<scalar_t>(x, mean, var, weight, bias, eps, y); });
}

void batch_norm_update_running_cpu(const Tensor& running_mean, const Tensor& running_var,
                                   const Tensor& mean, const Tensor& var, double momentum,
                                   std::int64_t count) {
  QGRAD_DISPATCH_FLOAT(mean.dtype(), "batch_norm", [&] {
    update_running<scalar_t>(running_mean, running_var, mean, var, momentum, count);
  });
}

void batch_norm_backward_cpu(const Tensor& gy, const Tensor& x, const Tensor& mean,
                             const Tensor& var, const Tensor& weight, double eps, bool training,
                             const Tensor& gx, const Tensor& gw, const Tensor& gb) {
  QGRAD_DISPATCH_FLOAT(x.dtype(), "batch_norm backward", [&] {
    backward<scalar_t>(gy, x, mean, var, weight, eps, training, gx, gw, gb);
  });
}

}  // namespace

void register_batch_norm_cpu_kernels(KernelRegistry& r) {
  r.table(kBatchNormTrainKernels).define(DeviceType::CPU, &batch_norm_train_cpu, kFloatingDTypes);
  r.table(kBatchNormEvalKernels).define(DeviceType::CPU, &batch_norm_eval_cpu, kFloatingDTypes);
  r.table(kBatchNormUpdateRunningKernels)
      .define(DeviceType::CPU, &batch_norm_update_running_cpu, kFloatingDTypes);
  r.table(kBatchNormBackwardKernels)
      .define(DeviceType::CPU, &batch_norm_backward_cpu, kFloatingDTypes);
}

}  // namespace qgrad
