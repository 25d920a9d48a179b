// CUDA side of core/copy.cpp: host<->device transfers, same-dtype device copies and fills.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/convert.h"
#include "core/copy.h"
#include "core/core_kernels.h"

namespace qgrad {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw DeviceError(std::string(what) + ": CUDA error: " + cudaGetErrorString(e));
}

template <typename T>
__global__ void fill_kernel(T* p, std::int64_t n, T v) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(blockDim.x) * gridDim.x)
    p[i] = v;
}

void cuda_copy_between_devices(const Tensor& src, const Tensor& dst) {
  const std::size_t n = static_cast<std::size_t>(src.numel()) * src.element_size();
  if (n == 0) return;
  QGRAD_CHECK(src.dtype() == dst.dtype() && src.is_contiguous() && dst.is_contiguous(), DTypeError,
              "to: device transfers need contiguous tensors of one dtype");
  cudaMemcpyKind kind = src.device().is_cpu()   ? cudaMemcpyHostToDevice
                        : dst.device().is_cpu() ? cudaMemcpyDeviceToHost
                                                : cudaMemcpyDeviceToDevice;
  check(cudaMemcpy(dst.raw_data(), src.raw_data(), n, kind), "to");
}

void cuda_copy_into(const Tensor& src, const Tensor& dst) {
  QGRAD_CHECK(src.dtype() == dst.dtype() && src.is_contiguous() && dst.is_contiguous(), DeviceError,
              "copy: strided or dtype-converting copies on CUDA are not implemented yet (shape ",
              src.shape(), ", ", dtype_name(src.dtype()), " -> ", dtype_name(dst.dtype()), ")");
  const std::size_t n = static_cast<std::size_t>(src.numel()) * src.element_size();
  check(cudaMemcpy(dst.raw_data(), src.raw_data(), n, cudaMemcpyDeviceToDevice), "copy");
}

void cuda_fill(const Tensor& dst, double value) {
  QGRAD_CHECK(dst.is_contiguous(), DeviceError,
              "fill_: strided fills on CUDA are not implemented yet (shape ", dst.shape(), ")");
  const std::int64_t n = dst.numel();
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<std::int64_t>((n + threads - 1) / threads, 65535));
  QGRAD_DISPATCH_ALL(dst.dtype(), "fill_", [&] {
    // Converted on the host as the CPU fill does (clamped, NaN -> 0 for integer dtypes).
    fill_kernel<scalar_t><<<blocks, threads>>>(static_cast<scalar_t*>(dst.raw_data()), n,
                                               convert_element<scalar_t>(value));
  });
  check(cudaGetLastError(), "fill_");
}

}  // namespace

void register_copy_cuda_kernels(KernelRegistry& r) {
  r.table<CopyKernel>("copy").define(DeviceType::CUDA, &cuda_copy_into, kAllDTypes);
  r.table<FillKernel>("fill").define(DeviceType::CUDA, &cuda_fill, kAllDTypes);
  r.table<TransferKernel>("transfer")
      .define(DeviceType::CUDA, &cuda_copy_between_devices, kAllDTypes);
}

}  // namespace qgrad
