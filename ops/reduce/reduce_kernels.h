// The reduce family's kernel signatures ("reduce" and "var" tables) and its per-device register
// functions (which also define core's "sum" table, used by sum_to_shape).
#pragma once

#include <vector>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace qgrad {

enum class ReduceOp { Sum, Max, Min, ArgMax, ArgMin };

// Reduces x over the dims flagged in `reduced` into `out` (contiguous, numel = product of kept
// dims). Sum accumulates in double; Max/Min propagate NaN; ArgMax/ArgMin give the first index.
// Output dtypes: Sum: x's (floats) or int64 (ints); Max/Min: x's; ArgMax/ArgMin: int64, and
// for those `values` (optional: undefined, or x's dtype like out) receives the extreme values in
// the same pass.
using ReduceKernel = void(ReduceOp op, const Tensor& x, const std::vector<bool>& reduced,
                          const Tensor& out, const Tensor& values);
inline constexpr KernelTableKey<ReduceKernel> kReduceKernels{
    "reduce", "sum mean amax amin max min argmax argmin"};
// Variance over the flagged dims with divisor max(0, N - correction) (two passes in double);
// x float32/float64, out of x's dtype.
using VarKernel = void(const Tensor& x, const std::vector<bool>& reduced, std::int64_t correction,
                       const Tensor& out);
inline constexpr KernelTableKey<VarKernel> kVarKernels{"var", "var"};

void register_reduce_cpu_kernels(KernelRegistry& r);
void register_reduce_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad
