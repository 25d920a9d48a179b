// CUDA batch normalisation kernels (float32 and float64) with the CPU kernels' contract and
// arithmetic (batch_norm_cpu.cpp): batch mean and biased variance in two passes, sums in double,
// deviations taken from the mean before scaling, y = (x - mean) * (invstd * weight) + bias, the
// unbiased variance for running_var. Plain CUDA, not cuDNN's batch-norm API: cuDNN saves the
// inverse standard deviation rather than the variance this contract stores, and its running-
// statistics update is fused with the forward. The reductions run one block per channel over
// its N * L values (a fixed tree, so every run gives the same bits); the element-wise parts
// reuse the CPU's expressions, so only the summation order differs from the CPU (--fmad=false
// keeps the multiply-adds unfused on both devices).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/cuda_check.h"
#include "core/cuda_stream.h"
#include "ops/batch_norm/batch_norm_kernels.h"

namespace qgrad {

namespace {

constexpr int kThreads = 512;  // per block; a power of two (the tree reduction halves it)
constexpr std::int64_t kMaxBlocks = 1 << 16;

struct Dims {
  std::int64_t n, c, l;
};
Dims dims_of(const Tensor& x) {
  return {x.size(0), x.size(1), x.size(2)};
}

// The sum of every thread's `v` in the block, returned to all threads. `shared` holds kThreads.
__device__ double block_sum(double v, double* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (static_cast<int>(threadIdx.x) < w) shared[threadIdx.x] += shared[threadIdx.x + w];
    __syncthreads();
  }
  const double total = shared[0];
  __syncthreads();  // shared[] is reused by the next call
  return total;
}

// Element j of channel c's N * L values.
__device__ std::int64_t channel_offset(const Dims& d, std::int64_t c, std::int64_t j) {
  return ((j / d.l) * d.c + c) * d.l + j % d.l;
}

template <typename T>
__global__ void train_kernel(const T* x, const T* weight, const T* bias, double eps, T* y, T* mean,
                             T* var, Dims d) {
  __shared__ double shared[kThreads];
  const std::int64_t count = d.n * d.l;
  for (std::int64_t c = blockIdx.x; c < d.c; c += gridDim.x) {
    double s = 0;
    for (std::int64_t j = threadIdx.x; j < count; j += kThreads) s += x[channel_offset(d, c, j)];
    const T m = static_cast<T>(block_sum(s, shared) / static_cast<double>(count));
    double sq = 0;
    for (std::int64_t j = threadIdx.x; j < count; j += kThreads) {
      const T dev = x[channel_offset(d, c, j)] - m;
      sq += static_cast<double>(dev * dev);
    }
    const double v = block_sum(sq, shared) / static_cast<double>(count);
    if (threadIdx.x == 0) {
      mean[c] = m;
      var[c] = static_cast<T>(v);
    }
    const T a = static_cast<T>(1.0 / sqrt(v + eps)) * (weight ? weight[c] : T(1));
    const T b = bias ? bias[c] : T(0);
    for (std::int64_t j = threadIdx.x; j < count; j += kThreads) {
      const std::int64_t o = channel_offset(d, c, j);
      y[o] = (x[o] - m) * a + b;
    }
  }
}

template <typename T>
__global__ void eval_kernel(std::int64_t total, const T* x, const T* mean, const T* var,
                            const T* weight, const T* bias, double eps, T* y, Dims d) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(blockDim.x) * gridDim.x) {
    const std::int64_t c = (i / d.l) % d.c;
    const T a =
        static_cast<T>(1.0 / sqrt(static_cast<double>(var[c]) + eps)) * (weight ? weight[c] : T(1));
    const T b = bias ? bias[c] : T(0);
    y[i] = (x[i] - mean[c]) * a + b;
  }
}

template <typename T>
__global__ void update_running_kernel(std::int64_t channels, T* running_mean, std::int64_t sm,
                                      T* running_var, std::int64_t sv, const T* mean, const T* var,
                                      double momentum, double unbias) {
  for (std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       c < channels; c += static_cast<std::int64_t>(blockDim.x) * gridDim.x) {
    if (running_mean)
      running_mean[c * sm] =
          static_cast<T>(momentum * static_cast<double>(mean[c]) +
                         (1 - momentum) * static_cast<double>(running_mean[c * sm]));
    if (running_var)
      running_var[c * sv] =
          static_cast<T>(momentum * static_cast<double>(var[c]) * unbias +
                         (1 - momentum) * static_cast<double>(running_var[c * sv]));
  }
}

template <typename T>
__global__ void backward_kernel(const T* gy, const T* x, const T* mean, const T* var,
                                const T* weight, double eps, bool training, T* gx, T* gw, T* gb,
                                Dims d) {
  __shared__ double shared[kThreads];
  const std::int64_t count = d.n * d.l;
  const bool need_sums = gw || gb || (gx && training);  // eval-mode gx needs no reduction
  for (std::int64_t c = blockIdx.x; c < d.c; c += gridDim.x) {
    const T m = mean[c];
    const double invstd = 1.0 / sqrt(static_cast<double>(var[c]) + eps);
    double sum_g = 0, sum_gx = 0;
    if (need_sums) {
      double a = 0, b = 0;
      for (std::int64_t j = threadIdx.x; j < count; j += kThreads) {
        const std::int64_t o = channel_offset(d, c, j);
        a += static_cast<double>(gy[o]);
        b += static_cast<double>(gy[o] * (x[o] - m));
      }
      sum_g = block_sum(a, shared);
      sum_gx = block_sum(b, shared);
    }
    if (threadIdx.x == 0) {
      if (gw) gw[c] = static_cast<T>(sum_gx * invstd);
      if (gb) gb[c] = static_cast<T>(sum_g);
    }
    if (!gx) continue;
    const T scale = static_cast<T>(invstd) * (weight ? weight[c] : T(1));
    if (training) {
      // gx = (g - mean(g) - (x - mean) * k) * invstd * w, k = mean(g * (x - mean)) / (var + eps)
      const T gmean = static_cast<T>(sum_g / static_cast<double>(count));
      const T k = static_cast<T>(sum_gx / static_cast<double>(count) * invstd * invstd);
      for (std::int64_t j = threadIdx.x; j < count; j += kThreads) {
        const std::int64_t o = channel_offset(d, c, j);
        gx[o] = (gy[o] - gmean - (x[o] - m) * k) * scale;
      }
    } else {
      for (std::int64_t j = threadIdx.x; j < count; j += kThreads) {
        const std::int64_t o = channel_offset(d, c, j);
        gx[o] = gy[o] * scale;
      }
    }
  }
}

template <typename T>
const T* ptr_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}
template <typename T>
T* mutable_ptr_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

unsigned channel_blocks(std::int64_t channels) {
  return static_cast<unsigned>(std::min(channels, kMaxBlocks));
}

void batch_norm_train_cuda(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                           const Tensor& y, const Tensor& mean, const Tensor& var) {
  const Dims d = dims_of(x);
  if (d.c == 0) return;
  const int dev = x.device().index;
  const CudaDeviceGuard guard(dev);
  QGRAD_DISPATCH_FLOAT(x.dtype(), "batch_norm", [&] {
    using T = scalar_t;
    train_kernel<T><<<channel_blocks(d.c), kThreads, 0, cuda_stream(dev)>>>(
        x.data_ptr<T>(), ptr_or_null<T>(weight), ptr_or_null<T>(bias), eps, y.data_ptr<T>(),
        mean.data_ptr<T>(), var.data_ptr<T>(), d);
  });
  QGRAD_CUDA_CHECK(cudaGetLastError(), "batch_norm", "input ", x.shape());
}

void batch_norm_eval_cuda(const Tensor& x, const Tensor& mean, const Tensor& var,
                          const Tensor& weight, const Tensor& bias, double eps, const Tensor& y) {
  const Dims d = dims_of(x);
  const std::int64_t total = x.numel();
  if (total == 0) return;
  const int dev = x.device().index;
  const CudaDeviceGuard guard(dev);
  const unsigned blocks =
      static_cast<unsigned>(std::min(kMaxBlocks, (total + kThreads - 1) / kThreads));
  QGRAD_DISPATCH_FLOAT(x.dtype(), "batch_norm", [&] {
    using T = scalar_t;
    eval_kernel<T><<<blocks, kThreads, 0, cuda_stream(dev)>>>(
        total, x.data_ptr<T>(), mean.data_ptr<T>(), var.data_ptr<T>(), ptr_or_null<T>(weight),
        ptr_or_null<T>(bias), eps, y.data_ptr<T>(), d);
  });
  QGRAD_CUDA_CHECK(cudaGetLastError(), "batch_norm", "input ", x.shape());
}

void batch_norm_update_running_cuda(const Tensor& running_mean, const Tensor& running_var,
                                    const Tensor& mean, const Tensor& var, double momentum,
                                    std::int64_t count) {
  const std::int64_t channels = mean.numel();
  if (channels == 0 || (!running_mean.defined() && !running_var.defined())) return;
  const int dev = mean.device().index;
  const CudaDeviceGuard guard(dev);
  const double unbias = static_cast<double>(count) / static_cast<double>(count - 1);
  const unsigned blocks =
      static_cast<unsigned>(std::min(kMaxBlocks, (channels + kThreads - 1) / kThreads));
  QGRAD_DISPATCH_FLOAT(mean.dtype(), "batch_norm", [&] {
    using T = scalar_t;
    update_running_kernel<T><<<blocks, kThreads, 0, cuda_stream(dev)>>>(
        channels, mutable_ptr_or_null<T>(running_mean),
        running_mean.defined() ? running_mean.stride(0) : 0, mutable_ptr_or_null<T>(running_var),
        running_var.defined() ? running_var.stride(0) : 0, mean.data_ptr<T>(), var.data_ptr<T>(),
        momentum, unbias);
  });
  QGRAD_CUDA_CHECK(cudaGetLastError(), "batch_norm", "running statistics of ", channels,
                   " channels");
}

void batch_norm_backward_cuda(const Tensor& gy, const Tensor& x, const Tensor& mean,
                              const Tensor& var, const Tensor& weight, double eps, bool training,
                              const Tensor& gx, const Tensor& gw, const Tensor& gb) {
  const Dims d = dims_of(x);
  if (d.c == 0) return;
  const int dev = x.device().index;
  const CudaDeviceGuard guard(dev);
  QGRAD_DISPATCH_FLOAT(x.dtype(), "batch_norm backward", [&] {
    using T = scalar_t;
    backward_kernel<T><<<channel_blocks(d.c), kThreads, 0, cuda_stream(dev)>>>(
        gy.data_ptr<T>(), x.data_ptr<T>(), mean.data_ptr<T>(), var.data_ptr<T>(),
        ptr_or_null<T>(weight), eps, training, mutable_ptr_or_null<T>(gx),
        mutable_ptr_or_null<T>(gw), mutable_ptr_or_null<T>(gb), d);
  });
  QGRAD_CUDA_CHECK(cudaGetLastError(), "batch_norm backward", "input ", x.shape());
}

}  // namespace

void register_batch_norm_cuda_kernels(KernelRegistry& r) {
  r.table<BatchNormTrainKernel>("batch_norm_train")
      .define(DeviceType::CUDA, &batch_norm_train_cuda, kFloatingDTypes);
  r.table<BatchNormEvalKernel>("batch_norm_eval")
      .define(DeviceType::CUDA, &batch_norm_eval_cuda, kFloatingDTypes);
  r.table<BatchNormUpdateRunningKernel>("batch_norm_update_running")
      .define(DeviceType::CUDA, &batch_norm_update_running_cuda, kFloatingDTypes);
  r.table<BatchNormBackwardKernel>("batch_norm_backward")
      .define(DeviceType::CUDA, &batch_norm_backward_cuda, kFloatingDTypes);
}

}  // namespace qgrad
