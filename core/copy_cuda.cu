// CUDA side of core/copy.cpp: host<->device and device<->device transfers, device copies (a
// memcpy when both sides are contiguous and of one dtype, else convert_element through cuda::map
// for any strides and dtypes) and fills, all queued on the device's qgrad stream
// (core/cuda_stream.h) with every CUDA error turned into a DeviceError naming the op, the shape and
// the dtype (core/cuda_check.h). Only a copy into host memory waits for the stream: the caller
// reads the bytes right after. A copy from host memory may return before the DMA ends, which is
// safe because qgrad's CPU tensors are pageable memory, which cudaMemcpyAsync stages before it
// returns.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "core/convert.h"
#include "core/copy.h"
#include "core/core_kernels.h"
#include "core/cuda_check.h"
#include "core/cuda_map.cuh"
#include "core/cuda_stream.h"

namespace qgrad {

namespace {

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
  const std::size_t n = byte_size(src);
  if (n == 0) return;
  const int device = dst.device().index;
  if (src.dtype() == dst.dtype() && src.is_contiguous() && dst.is_contiguous()) {
    CudaDeviceGuard guard(device);
    QGRAD_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), n, cudaMemcpyDeviceToDevice,
                                     cuda_stream(device)),
                     "copy", dst.device(), ", shape ", src.shape(), ", ", dtype_name(src.dtype()));
    return;
  }
  // Strided or converting: the conversion every copy uses (core/convert.h), on the device.
  QGRAD_DISPATCH_ALL(dst.dtype(), "copy", [&] {
    using To = scalar_t;
    QGRAD_DISPATCH_ALL(src.dtype(), "copy", [&] {
      cuda::map<To, scalar_t>("copy", ConvertElement<To, scalar_t>{}, dst, src);
    });
  });
}

void cuda_fill(const Tensor& dst, double value) {
  if (dst.numel() == 0) return;  // a launch with zero blocks is an invalid configuration
  // Converted on the host as the CPU fill does (clamped, NaN -> 0 for integer dtypes).
  QGRAD_DISPATCH_ALL(dst.dtype(), "fill_", [&] {
    cuda::map<scalar_t>("fill_", ConstantElement<scalar_t>{convert_element<scalar_t>(value)}, dst);
  });
}

}  // namespace

void register_copy_cuda_kernels(KernelRegistry& r) {
  r.table(kCopyKernels).define(DeviceType::CUDA, &cuda_copy_into, kAllDTypes);
  r.table(kFillKernels).define(DeviceType::CUDA, &cuda_fill, kAllDTypes);
  r.table(kTransferKernels).define(DeviceType::CUDA, &cuda_copy_between_devices, kAllDTypes);
}

}  // namespace qgrad
