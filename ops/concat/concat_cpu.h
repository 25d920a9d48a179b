// CPU concatenation kernel (no autograd).
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace qgrad {

// Copies inputs[k] into out.narrow(dim, offsets[k], inputs[k].size(dim)); `out` is contiguous,
// the inputs may have any strides and dtypes (converted to out's dtype).
void concat_cpu(const std::vector<Tensor>& inputs, const std::vector<std::int64_t>& offsets,
                std::int64_t dim, const Tensor& out);

}  // namespace qgrad
