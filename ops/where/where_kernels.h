// The where family's kernel signatures ("where" and "logical" tables) and its per-device
// register functions.
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"

namespace qgrad {

enum class LogicalOp { And, Or, Not };

// out = cond ? a : b; cond uint8, a/b of out's dtype, all views of out's shape.
using WhereKernel = void(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out);
inline constexpr KernelTableKey<WhereKernel> kWhereKernels{"where", "where"};
// out = a op b on uint8 masks (nonzero = true; Not ignores b), all views of out's shape.
using LogicalKernel = void(LogicalOp op, const Tensor& a, const Tensor& b, const Tensor& out);
inline constexpr KernelTableKey<LogicalKernel> kLogicalKernels{
    "logical", "logical_and logical_or logical_not"};

void register_where_cpu_kernels(KernelRegistry& r);
void register_where_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad
