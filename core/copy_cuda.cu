// CUDA side of core/copy.cpp: host<->device and device<->device transfers, same-dtype device
// copies and fills, all queued on the device's qgrad stream (core/cuda_stream.h) with every CUDA
// error turned into a DeviceError naming the op, the shape and the dtype (core/cuda_check.h).
// Only a copy into host memory waits for the stream: the caller reads the bytes right after.
// A copy from host memory may return before the DMA ends, which is safe because qgrad's CPU
// tensors are pageable memory, which cudaMemcpyAsync stages before it returns.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "core/convert.h"
#include "core/copy.h"
#include "core/core_kernels.h"
#include "core/cuda_check.h"
#include "core/cuda_stream.h"

namespace qgrad {

namespace {

template <typename T>
__global__ void fill_kernel(T* p, std::int64_t n, T v) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(blockDim.x) * gridDim.x)
    p[i] = v;
}

std::size_t byte_size(const Tensor& t) {
  return static_cast<std::size_t>(t.numel()) * t.element_size();
}

void cuda_copy_between_devices(const Tensor& src, const Tensor& dst) {
  QGRAD_CHECK(src.dtype() == dst.dtype() && src.is_contiguous() && dst.is_contiguous(), DTypeError,
              "to: device transfers need contiguous tensors of one dtype (shape ", src.shape(),
              ", ", dtype_name(src.dtype()), " -> ", dtype_name(dst.dtype()), ")");
  const std::size_t n = byte_size(src);
  if (n == 0) return;
  const Device from = src.device(), to = dst.device();
  if (from.is_cpu()) {
    // Host to device: queued on the destination's stream; no wait (see the header comment).
    CudaDeviceGuard guard(to.index);
    QGRAD_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), n, cudaMemcpyHostToDevice,
                                     cuda_stream(to.index)),
                     "to", "cpu -> ", to, ", shape ", src.shape(), ", ", dtype_name(src.dtype()));
  } else if (to.is_cpu()) {
    // Device to host: the caller reads the bytes as soon as this returns, so wait for them.
    CudaDeviceGuard guard(from.index);
    QGRAD_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), n, cudaMemcpyDeviceToHost,
                                     cuda_stream(from.index)),
                     "to", from, " -> cpu, shape ", src.shape(), ", ", dtype_name(src.dtype()));
    cuda_stream_synchronize(from.index, "to");
  } else {
    // Between two devices, i.e. two streams, which the single-stream ordering does not cover:
    // wait until the source is written, copy on the destination's stream, and wait for the copy
    // so that neither block can be freed and reused while it is still being read or written.
    cuda_stream_synchronize(from.index, "to");
    CudaDeviceGuard guard(to.index);
    QGRAD_CUDA_CHECK(cudaMemcpyPeerAsync(dst.raw_data(), to.index, src.raw_data(), from.index, n,
                                         cuda_stream(to.index)),
                     "to", from, " -> ", to, ", shape ", src.shape(), ", ",
                     dtype_name(src.dtype()));
    cuda_stream_synchronize(to.index, "to");
  }
}

void cuda_copy_into(const Tensor& src, const Tensor& dst) {
  QGRAD_CHECK(src.dtype() == dst.dtype() && src.is_contiguous() && dst.is_contiguous(), DeviceError,
              "copy: strided or dtype-converting copies on CUDA are not implemented yet (shape ",
              src.shape(), ", ", dtype_name(src.dtype()), " -> ", dtype_name(dst.dtype()), ")");
  const std::size_t n = byte_size(src);
  if (n == 0) return;
  const int device = dst.device().index;
  CudaDeviceGuard guard(device);
  QGRAD_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), n, cudaMemcpyDeviceToDevice,
                                   cuda_stream(device)),
                   "copy", dst.device(), ", shape ", src.shape(), ", ", dtype_name(src.dtype()));
}

void cuda_fill(const Tensor& dst, double value) {
  QGRAD_CHECK(dst.is_contiguous(), DeviceError,
              "fill_: strided fills on CUDA are not implemented yet (shape ", dst.shape(), ")");
  const std::int64_t n = dst.numel();
  if (n == 0) return;  // a launch with zero blocks is an invalid configuration
  const int device = dst.device().index;
  CudaDeviceGuard guard(device);
  cudaStream_t stream = cuda_stream(device);
  constexpr int kThreads = 256;
  // Grid-stride loop: the grid is capped and each thread fills several elements when needed.
  const int blocks = static_cast<int>(std::min<std::int64_t>((n + kThreads - 1) / kThreads, 65535));
  QGRAD_DISPATCH_ALL(dst.dtype(), "fill_", [&] {
    // Converted on the host as the CPU fill does (clamped, NaN -> 0 for integer dtypes).
    fill_kernel<scalar_t><<<blocks, kThreads, 0, stream>>>(static_cast<scalar_t*>(dst.raw_data()),
                                                           n, convert_element<scalar_t>(value));
  });
  // A bad launch configuration shows here; faults inside the kernel at the next synchronisation.
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    detail::throw_cuda_error(e, "the fill kernel launch", "fill_", dst.device(), ", shape ",
                             dst.shape(), ", ", dtype_name(dst.dtype()));
}

}  // namespace

void register_copy_cuda_kernels(KernelRegistry& r) {
  r.table<CopyKernel>("copy").define(DeviceType::CUDA, &cuda_copy_into, kAllDTypes);
  r.table<FillKernel>("fill").define(DeviceType::CUDA, &cuda_fill, kAllDTypes);
  r.table<TransferKernel>("transfer")
      .define(DeviceType::CUDA, &cuda_copy_between_devices, kAllDTypes);
}

}  // namespace qgrad
