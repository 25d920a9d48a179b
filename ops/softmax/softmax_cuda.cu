// CUDA softmax / log_softmax, forward and backward. The tensor is seen as [outer, C, inner]
// (DimView, copied to contiguous only when its dims do not merge) and each of the outer * inner
// rows of C elements is given to one thread block: a block max, a block sum of the
// exponentials in double, then the normalising pass. The formulas are the CPU kernel's (the
// same exp_nonpositive from core/vec_math.h, the same rounding points, log_softmax as
// (x - max) - log(sum)); only the summation order differs, so results agree with the CPU to
// rounding.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/cuda_block_reduce.cuh"
#include "core/cuda_check.h"
#include "core/cuda_stream.h"
#include "core/vec_math.h"
#include "ops/softmax/dim_view.h"
#include "ops/softmax/softmax_kernels.h"

namespace qgrad {

namespace {

using cuda::kRowThreads;

template <typename T>
__global__ void softmax_forward_kernel(const T* x, DimView v, bool log, T* y) {
  __shared__ double shared[kRowThreads];
  const std::int64_t rows = v.outer * v.inner, C = v.size, cs = v.size_stride;
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const std::int64_t o = r / v.inner, i = r % v.inner;
    const T* xr = x + o * v.outer_stride + i * v.inner_stride;
    T* yr = y + o * C * v.inner + i;  // contiguous out: class pitch `inner`
    T m = -std::numeric_limits<T>::infinity();
    for (std::int64_t c = threadIdx.x; c < C; c += blockDim.x) m = xr[c * cs] > m ? xr[c * cs] : m;
    m = static_cast<T>(cuda::block_reduce(static_cast<double>(m), shared, cuda::MaxOp{}));
    double s = 0;
    for (std::int64_t c = threadIdx.x; c < C; c += blockDim.x)
      s += static_cast<double>(vec_math::exp_nonpositive(static_cast<T>(xr[c * cs] - m)));
    s = cuda::block_reduce(s, shared, cuda::SumOp{});
    if (log) {
      const T lse = static_cast<T>(::log(s));
      for (std::int64_t c = threadIdx.x; c < C; c += blockDim.x)
        yr[c * v.inner] = (xr[c * cs] - m) - lse;
    } else {
      const T inv = static_cast<T>(1.0 / s);
      for (std::int64_t c = threadIdx.x; c < C; c += blockDim.x)
        yr[c * v.inner] = vec_math::exp_nonpositive(static_cast<T>(xr[c * cs] - m)) * inv;
    }
  }
}

// g read through its DimView; y and gx contiguous with the forward output's layout.
template <typename T>
__global__ void softmax_backward_kernel(const T* g, DimView v, const T* y, bool log, T* gx) {
  __shared__ double shared[kRowThreads];
  const std::int64_t rows = v.outer * v.inner, C = v.size, cs = v.size_stride;
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const std::int64_t o = r / v.inner, i = r % v.inner;
    const T* gr = g + o * v.outer_stride + i * v.inner_stride;
    const std::int64_t base = o * C * v.inner + i;
    const T* yr = y + base;
    T* out = gx + base;
    double acc = 0;
    for (std::int64_t c = threadIdx.x; c < C; c += blockDim.x)
      acc += log ? static_cast<double>(gr[c * cs])
                 : static_cast<double>(static_cast<T>(gr[c * cs] * yr[c * v.inner]));
    const T s = static_cast<T>(cuda::block_reduce(acc, shared, cuda::SumOp{}));
    for (std::int64_t c = threadIdx.x; c < C; c += blockDim.x) {
      const T gc = gr[c * cs], yc = yr[c * v.inner];
      out[c * v.inner] = log ? gc - vec_math::exp_nonpositive(yc) * s : yc * (gc - s);
    }
  }
}

void softmax_cuda(const Tensor& x, std::int64_t dim, bool log, const Tensor& out) {
  if (out.numel() == 0) return;
  const char* op = log ? "log_softmax" : "softmax";
  QGRAD_CHECK(out.is_contiguous(), Error, op, ": output buffer must be contiguous");
  Tensor xs;
  const DimView v = dim_view_or_copy(x, dim, xs);
  const int device = out.device().index;
  const CudaDeviceGuard guard(device);
  QGRAD_DISPATCH_FLOAT(x.dtype(), op, [&] {
    using T = scalar_t;
    softmax_forward_kernel<T>
        <<<cuda::row_blocks(v.outer * v.inner), kRowThreads, 0, cuda_stream(device)>>>(
            static_cast<const T*>(xs.raw_data()), v, log, static_cast<T*>(out.raw_data()));
  });
  QGRAD_CUDA_CHECK(cudaGetLastError(), op, "kernel launch, shape ", x.shape(), ", dim ", dim);
}

void softmax_backward_cuda(const Tensor& g, const Tensor& y, std::int64_t dim, bool log,
                           const Tensor& grad_in) {
  if (grad_in.numel() == 0) return;
  const char* op = log ? "log_softmax backward" : "softmax backward";
  QGRAD_CHECK(y.is_contiguous() && grad_in.is_contiguous(), Error, op,
              ": saved output and gradient buffer must be contiguous");
  Tensor gs;
  const DimView v = dim_view_or_copy(g, dim, gs);
  const int device = grad_in.device().index;
  const CudaDeviceGuard guard(device);
  QGRAD_DISPATCH_FLOAT(g.dtype(), op, [&] {
    using T = scalar_t;
    softmax_backward_kernel<T>
        <<<cuda::row_blocks(v.outer * v.inner), kRowThreads, 0, cuda_stream(device)>>>(
            static_cast<const T*>(gs.raw_data()), v, static_cast<const T*>(y.raw_data()), log,
            static_cast<T*>(grad_in.raw_data()));
  });
  QGRAD_CUDA_CHECK(cudaGetLastError(), op, "kernel launch, shape ", g.shape(), ", dim ", dim);
}

}  // namespace

void register_softmax_cuda_kernels(KernelRegistry& r) {
  r.table(kSoftmaxKernels).define(DeviceType::CUDA, &softmax_cuda, kFloatingDTypes);
  r.table(kSoftmaxBackwardKernels)
      .define(DeviceType::CUDA, &softmax_backward_cuda, kFloatingDTypes);
}

}  // namespace qgrad
