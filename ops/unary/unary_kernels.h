// The unary family's kernel signatures ("unary" forward and "unary_backward" tables) and its
// per-device register functions.
#pragma once

#include "core/dispatch.h"
#include "ops/unary/unary.h"

namespace qgrad {

// out = op(x), p0/p1 the op's parameters (slope, bounds); x and out of one shape and dtype.
using UnaryKernel = void(UnaryOp op, const Tensor& x, const Tensor& out, double p0, double p1);
inline constexpr KernelTableKey<UnaryKernel> kUnaryKernels{
    "unary", "neg abs sign exp log sqrt relu relu6 leaky_relu hardtanh sigmoid tanh gelu clamp"};
// out = d op / dx * g, from g and the saved input x and/or output y (floating dtypes).
using UnaryBackwardKernel = void(UnaryOp op, const Tensor& g, const Tensor& x, const Tensor& y,
                                 const Tensor& out, double p0, double p1);
inline constexpr KernelTableKey<UnaryBackwardKernel> kUnaryBackwardKernels{
    "unary_backward",
    "neg abs sign exp log sqrt relu relu6 leaky_relu hardtanh sigmoid tanh gelu clamp"};

void register_unary_cpu_kernels(KernelRegistry& r);
void register_unary_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad
