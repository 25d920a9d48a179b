// The concat family's kernel signature ("concat" table: copies each input into its slice of
// the output, for concat and stack) and its per-device register functions.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace qgrad {

// Copies inputs[k] into out.narrow(dim, offsets[k], inputs[k].size(dim)); `out` is contiguous,
// the inputs may have any strides and dtypes (converted to out's dtype).
using ConcatKernel = void(const std::vector<Tensor>& inputs,
                          const std::vector<std::int64_t>& offsets, std::int64_t dim,
                          const Tensor& out);
inline constexpr KernelTableKey<ConcatKernel> kConcatKernels{"concat", "concat stack"};

void register_concat_cpu_kernels(KernelRegistry& r);
void register_concat_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad
