// The binary family's kernel signature ("binary" table: out = a op b for operands already
// promoted and broadcast to out's shape) and its per-device register functions.
#pragma once

#include "core/dispatch.h"
#include "ops/binary/binary.h"

namespace qgrad {

// a, b: views of out's shape (stride 0 on broadcast dims), dtype `compute`; out: the op's
// result dtype (compute, or uint8 for comparisons).
using BinaryKernel = void(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);
inline constexpr KernelTableKey<BinaryKernel> kBinaryKernels{
    "binary", "add sub mul div pow maximum minimum eq ne lt le gt ge"};

// Define the "binary" table's kernel and core's "add" (gradient accumulation) for one device.
void register_binary_cpu_kernels(KernelRegistry& r);
void register_binary_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad
