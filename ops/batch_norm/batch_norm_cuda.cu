// CUDA batch normalisation kernels (float32 and float64) with the CPU kernels' contract and
// arithmetic (batch_norm_cpu.cpp): batch mean and biased variance in two passes, sums in double,
// deviations taken from the mean before scaling, y = (x - mean) * (invstd * weight) + bias, the
// unbiased variance for running_var. Plain CUDA, not cuDNN's batch-norm API: cuDNN saves the
// inverse standard deviation rather than the variance this contract stores, and its running-
// statistics update is fused with the forward. Each channel's N * L values are cut into chunks,
// one block each (so 16 channels still fill a GPU), by the shape alone: each block sums its chunk
// in a fixed tree and the next pass adds the chunks' partial sums in chunk order, so every run on
// every GPU gives the same bits. Forward: sums, deviations from the mean, normalisation (three
// passes over x); backward: the two sums, then gx. The element-wise parts reuse the CPU's
// expressions, so only the summation order differs from the CPU (--fmad=false keeps the
// multiply-adds unfused on both devices).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/allocator.h"
#include "core/cuda_check.h"
#include "core/cuda_stream.h"
#include "ops/batch_norm/batch_norm_kernels.h"

namespace qgrad {

namespace {

constexpr int kThreads = 256;  // per block; a power of two (the tree reduction halves it)
constexpr std::int64_t kMaxBlocks = 1 << 16;
// Each channel's N * L values are split into chunks, one block each, so that a layer of 16
// channels still fills the GPU. The split depends on the shape alone (these constants, not the
// GPU's size), so every GPU sums in the same order and gives the same bits.
constexpr std::int64_t kTargetBlocks = 1024;
constexpr std::int64_t kMinChunk = 4096;  // values per block, at least (16 per thread)

struct Dims {
  std::int64_t n, c, l;
};
Dims dims_of(const Tensor& x) {
  return {x.size(0), x.size(1), x.size(2)};
}

// How a channel's count = N * L values are cut: `chunks` blocks of `per` values (the last one
// shorter). per + L fits in 32 bits, so a block walks its values with 32-bit division.
struct Split {
  std::int64_t count, per;
  int chunks;
};
Split split_of(const Dims& d, const char* op) {
  const std::int64_t count = d.n * d.l;
  const std::int64_t limit = (std::int64_t{1} << 31) - d.l;
  QGRAD_CHECK(limit > 0, ShapeError, op, ": ", d.l,
              " values per channel and sample are more than the CUDA kernels take (2^31)");
  std::int64_t chunks =
      std::max<std::int64_t>(1, (kTargetBlocks + d.c - 1) / std::max<std::int64_t>(d.c, 1));
  chunks = std::min(chunks, std::max<std::int64_t>(1, count / kMinChunk));
  chunks = std::max(chunks, (count + limit - 1) / limit);
  chunks = std::min<std::int64_t>(chunks, kMaxBlocks);
  const std::int64_t per = (count + chunks - 1) / std::max<std::int64_t>(chunks, 1);
  QGRAD_CHECK(per < limit, ShapeError, op, ": ", count,
              " values per channel are more than the CUDA kernels take");
  return {count, per, static_cast<int>(chunks)};
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

// The total of channel c's partials, added in chunk order by one thread (the same bits in every
// block that asks), returned to all threads.
__device__ double chunk_total(const double* partial, std::int64_t c, int chunks, double* shared) {
  if (threadIdx.x == 0) {
    double t = 0;
    for (int k = 0; k < chunks; ++k) t += partial[c * chunks + k];
    shared[0] = t;
  }
  __syncthreads();
  const double t = shared[0];
  __syncthreads();
  return t;
}

// The values of channel c in chunk k: calls f(offset) for each, offset into the [N, C, L] data.
// Threads take consecutive values, so a row of L is read coalesced.
template <typename F>
__device__ void for_chunk(const Dims& d, const Split& s, std::int64_t c, int k, const F& f) {
  const std::int64_t first = static_cast<std::int64_t>(k) * s.per;
  const std::int64_t last = std::min(first + s.per, s.count);
  if (first >= last) return;
  const std::int64_t n0 = first / d.l;
  const auto l0 = static_cast<std::uint32_t>(first % d.l);
  const auto len = static_cast<std::uint32_t>(last - first);
  const auto l = static_cast<std::uint32_t>(d.l);
  for (std::uint32_t j = threadIdx.x; j < len; j += kThreads) {
    const std::uint32_t t = l0 + j;
    const std::int64_t n = n0 + t / l;
    f((n * d.c + c) * d.l + t % l);
  }
}

// Pass 1 of the forward: each chunk's sum of x.
template <typename T>
__global__ void sum_kernel(const T* x, Dims d, Split s, double* partial_sum) {
  __shared__ double shared[kThreads];
  const int k = static_cast<int>(blockIdx.x);
  for (std::int64_t c = blockIdx.y; c < d.c; c += gridDim.y) {
    double acc = 0;
    for_chunk(d, s, c, k, [&](std::int64_t o) { acc += x[o]; });
    const double total = block_sum(acc, shared);
    if (threadIdx.x == 0) partial_sum[c * s.chunks + k] = total;
  }
}

// Pass 2: each chunk's sum of squared deviations from the channel's mean.
template <typename T>
__global__ void deviation_kernel(const T* x, Dims d, Split s, const double* partial_sum,
                                 double* partial_sq) {
  __shared__ double shared[kThreads];
  const int k = static_cast<int>(blockIdx.x);
  for (std::int64_t c = blockIdx.y; c < d.c; c += gridDim.y) {
    const T m = static_cast<T>(chunk_total(partial_sum, c, s.chunks, shared) /
                               static_cast<double>(s.count));
    double acc = 0;
    for_chunk(d, s, c, k, [&](std::int64_t o) {
      const T dev = x[o] - m;
      acc += static_cast<double>(dev * dev);
    });
    const double total = block_sum(acc, shared);
    if (threadIdx.x == 0) partial_sq[c * s.chunks + k] = total;
  }
}

// Pass 3: the statistics (written by chunk 0) and y = (x - mean) * a + b.
template <typename T>
__global__ void normalize_kernel(const T* x, Dims d, Split s, const double* partial_sum,
                                 const double* partial_sq, const T* weight, const T* bias,
                                 double eps, T* y, T* mean, T* var) {
  __shared__ double shared[kThreads];
  const int k = static_cast<int>(blockIdx.x);
  for (std::int64_t c = blockIdx.y; c < d.c; c += gridDim.y) {
    const T m = static_cast<T>(chunk_total(partial_sum, c, s.chunks, shared) /
                               static_cast<double>(s.count));
    const double v = chunk_total(partial_sq, c, s.chunks, shared) / static_cast<double>(s.count);
    if (k == 0 && threadIdx.x == 0) {
      mean[c] = m;
      var[c] = static_cast<T>(v);
    }
    const T a = static_cast<T>(1.0 / sqrt(v + eps)) * (weight ? weight[c] : T(1));
    const T b = bias ? bias[c] : T(0);
    for_chunk(d, s, c, k, [&](std::int64_t o) { y[o] = (x[o] - m) * a + b; });
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

// Backward pass 1: each chunk's sums of gy and gy * (x - mean).
template <typename T>
__global__ void backward_sums_kernel(const T* gy, const T* x, const T* mean, Dims d, Split s,
                                     double* partial_g, double* partial_gx) {
  __shared__ double shared[kThreads];
  const int k = static_cast<int>(blockIdx.x);
  for (std::int64_t c = blockIdx.y; c < d.c; c += gridDim.y) {
    const T m = mean[c];
    double a = 0, b = 0;
    for_chunk(d, s, c, k, [&](std::int64_t o) {
      a += static_cast<double>(gy[o]);
      b += static_cast<double>(gy[o] * (x[o] - m));
    });
    const double ta = block_sum(a, shared);
    const double tb = block_sum(b, shared);
    if (threadIdx.x == 0) {
      partial_g[c * s.chunks + k] = ta;
      partial_gx[c * s.chunks + k] = tb;
    }
  }
}

// Backward pass 2: gw and gb (written by chunk 0) and gx. Without partials (no sums needed: an
// eval-mode gx alone) the sums are 0 and unused.
template <typename T>
__global__ void backward_apply_kernel(const T* gy, const T* x, const T* mean, const T* var,
                                      const T* weight, double eps, bool training, Dims d, Split s,
                                      const double* partial_g, const double* partial_gx, T* gx,
                                      T* gw, T* gb) {
  __shared__ double shared[kThreads];
  const int k = static_cast<int>(blockIdx.x);
  for (std::int64_t c = blockIdx.y; c < d.c; c += gridDim.y) {
    const T m = mean[c];
    const double invstd = 1.0 / sqrt(static_cast<double>(var[c]) + eps);
    const double sum_g = partial_g ? chunk_total(partial_g, c, s.chunks, shared) : 0.0;
    const double sum_gx = partial_gx ? chunk_total(partial_gx, c, s.chunks, shared) : 0.0;
    if (k == 0 && threadIdx.x == 0) {
      if (gw) gw[c] = static_cast<T>(sum_gx * invstd);
      if (gb) gb[c] = static_cast<T>(sum_g);
    }
    if (!gx) continue;
    const T scale = static_cast<T>(invstd) * (weight ? weight[c] : T(1));
    if (training) {
      // gx = (g - mean(g) - (x - mean) * k) * invstd * w, k = mean(g * (x - mean)) / (var + eps)
      const T gmean = static_cast<T>(sum_g / static_cast<double>(s.count));
      const T kk = static_cast<T>(sum_gx / static_cast<double>(s.count) * invstd * invstd);
      for_chunk(d, s, c, k,
                [&](std::int64_t o) { gx[o] = (gy[o] - gmean - (x[o] - m) * kk) * scale; });
    } else {
      for_chunk(d, s, c, k, [&](std::int64_t o) { gx[o] = gy[o] * scale; });
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

dim3 grid_of(const Dims& d, const Split& s) {
  return dim3(static_cast<unsigned>(s.chunks),
              static_cast<unsigned>(std::min<std::int64_t>(d.c, 65535)));
}

void batch_norm_train_cuda(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                           const Tensor& y, const Tensor& mean, const Tensor& var) {
  const Dims d = dims_of(x);
  if (d.c == 0) return;
  const Split s = split_of(d, "batch_norm");
  const int dev = x.device().index;
  const CudaDeviceGuard guard(dev);
  const std::size_t n = static_cast<std::size_t>(d.c) * static_cast<std::size_t>(s.chunks);
  const DataPtr buf = allocate(2 * n * sizeof(double), x.device());
  double* partial_sum = static_cast<double*>(buf.get());
  double* partial_sq = partial_sum + n;
  cudaStream_t stream = cuda_stream(dev);
  QGRAD_DISPATCH_FLOAT(x.dtype(), "batch_norm", [&] {
    using T = scalar_t;
    sum_kernel<T><<<grid_of(d, s), kThreads, 0, stream>>>(x.data_ptr<T>(), d, s, partial_sum);
    deviation_kernel<T>
        <<<grid_of(d, s), kThreads, 0, stream>>>(x.data_ptr<T>(), d, s, partial_sum, partial_sq);
    normalize_kernel<T><<<grid_of(d, s), kThreads, 0, stream>>>(
        x.data_ptr<T>(), d, s, partial_sum, partial_sq, ptr_or_null<T>(weight),
        ptr_or_null<T>(bias), eps, y.data_ptr<T>(), mean.data_ptr<T>(), var.data_ptr<T>());
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
  const Split s = split_of(d, "batch_norm backward");
  const int dev = x.device().index;
  const CudaDeviceGuard guard(dev);
  // An eval-mode gx alone needs no reduction.
  const bool need_sums = gw.defined() || gb.defined() || (gx.defined() && training);
  const std::size_t n = static_cast<std::size_t>(d.c) * static_cast<std::size_t>(s.chunks);
  const DataPtr buf = allocate(2 * n * sizeof(double), x.device());  // a few KiB, cached
  double* partial_g = need_sums ? static_cast<double*>(buf.get()) : nullptr;
  double* partial_gx = need_sums ? partial_g + n : nullptr;
  cudaStream_t stream = cuda_stream(dev);
  QGRAD_DISPATCH_FLOAT(x.dtype(), "batch_norm backward", [&] {
    using T = scalar_t;
    if (need_sums)
      backward_sums_kernel<T><<<grid_of(d, s), kThreads, 0, stream>>>(
          gy.data_ptr<T>(), x.data_ptr<T>(), mean.data_ptr<T>(), d, s, partial_g, partial_gx);
    backward_apply_kernel<T><<<grid_of(d, s), kThreads, 0, stream>>>(
        gy.data_ptr<T>(), x.data_ptr<T>(), mean.data_ptr<T>(), var.data_ptr<T>(),
        ptr_or_null<T>(weight), eps, training, d, s, partial_g, partial_gx,
        mutable_ptr_or_null<T>(gx), mutable_ptr_or_null<T>(gw), mutable_ptr_or_null<T>(gb));
  });
  QGRAD_CUDA_CHECK(cudaGetLastError(), "batch_norm backward", "input ", x.shape());
}

}  // namespace

void register_batch_norm_cuda_kernels(KernelRegistry& r) {
  r.table(kBatchNormTrainKernels).define(DeviceType::CUDA, &batch_norm_train_cuda, kFloatingDTypes);
  r.table(kBatchNormEvalKernels).define(DeviceType::CUDA, &batch_norm_eval_cuda, kFloatingDTypes);
  r.table(kBatchNormUpdateRunningKernels)
      .define(DeviceType::CUDA, &batch_norm_update_running_cuda, kFloatingDTypes);
  r.table(kBatchNormBackwardKernels)
      .define(DeviceType::CUDA, &batch_norm_backward_cuda, kFloatingDTypes);
}

}  // namespace qgrad
