// The dropout family's kernel signature ("dropout" table: one kernel applies the mask forward,
// to x, and backward, to the output gradient), the mask it draws, and its per-device register
// functions.
#pragma once

#include <cstdint>

#include "core/dispatch.h"
#include "core/generator.h"
#include "core/tensor.h"

namespace qgrad {

// Identifies one dropout mask: element i (row-major) is kept when the i-th 32-bit draw of
// `gen` from block `first_block` on, as a 24-bit uniform u in [0, 1), satisfies u >= p.
struct DropoutMask {
  Generator gen;
  std::uint64_t first_block = 0;
  double p = 0.5;
};

// out (contiguous, in's shape and dtype) = kept ? in / (1 - p) : 0. `in` may have any strides.
using DropoutKernel = void(const Tensor& in, const DropoutMask& mask, const Tensor& out);
inline constexpr KernelTableKey<DropoutKernel> kDropoutKernels{"dropout", "dropout"};

void register_dropout_cpu_kernels(KernelRegistry& r);
void register_dropout_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad
