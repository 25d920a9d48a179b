// The kernel signatures core/ dispatches on (allocation, copies, fills, transfers, and the two
// reductions autograd needs: gradient accumulation and sum_to_shape), and the register
// functions of core's own kernels. "add" and "sum" are defined by the ops families (binary,
// reduce): declaring their signatures here keeps core free of ops/ headers.
#pragma once

#include <vector>

#include "core/allocator.h"
#include "core/dispatch.h"
#include "core/tensor.h"

namespace qgrad {

// "copy": dst = src converted to dst's dtype; same shape and device, any strides.
using CopyKernel = void(const Tensor& src, const Tensor& dst);
inline constexpr KernelTableKey<CopyKernel> kCopyKernels{"copy", ""};
// "fill": every element of dst (any strides) = value converted as convert_element does.
using FillKernel = void(const Tensor& dst, double value);
inline constexpr KernelTableKey<FillKernel> kFillKernels{"fill", ""};
// "transfer": contiguous src and dst of one dtype and shape on different devices; registered
// under the device type that is not the CPU.
using TransferKernel = void(const Tensor& src, const Tensor& dst);
inline constexpr KernelTableKey<TransferKernel> kTransferKernels{"transfer", ""};
// "add": out = a + b for tensors of one shape, dtype and device (out may be a).
using AddKernel = void(const Tensor& a, const Tensor& b, const Tensor& out);
inline constexpr KernelTableKey<AddKernel> kAddKernels{"add", ""};
// "sum": out (contiguous, numel = product of the kept dims) = x summed over the flagged dims.
using SumKernel = void(const Tensor& x, const std::vector<bool>& reduced, const Tensor& out);
inline constexpr KernelTableKey<SumKernel> kSumKernels{"sum", ""};

void register_allocator_cpu_kernels(KernelRegistry& r);
void register_copy_cpu_kernels(KernelRegistry& r);
#ifdef QGRAD_WITH_CUDA
void register_allocator_cuda_kernels(KernelRegistry& r);
void register_copy_cuda_kernels(KernelRegistry& r);
#endif

}  // namespace qgrad
