// The matmul family's kernel signature ("matmul" table: the batched matrix product, used by
// matmul and linear, forward and backward) and its per-device register functions.
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"

namespace qgrad {

// out = a @ b (+ bias). a is [..., M, K] and b [..., K, N], both of out's rank, each batch dim
// equal to out's or 1 (broadcast); any strides (including 0 from expand). bias is undefined or
// 1-D [N] added to every row. out is [..., M, N], contiguous and preallocated; all share a dtype.
using MatmulKernel = void(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& out);
inline constexpr KernelTableKey<MatmulKernel> kMatmulKernels{"matmul", "matmul linear"};

void register_matmul_cpu_kernels(KernelRegistry& r);
void register_matmul_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad
