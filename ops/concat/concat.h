/// @file
/// concat (torch.cat) and stack, differentiable: the output gradient is split back into one
/// slice per input. Inputs may have different dtypes (the result takes the promoted dtype, as
/// torch.cat; each gradient returns in its input's dtype) and any strides.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace qgrad {

/// Joins tensors along an existing dim; all other sizes must match. As torch.cat, 1-D empty
/// tensors (shape [0]) are skipped whatever the others' rank.
Tensor concat(const std::vector<Tensor>& tensors, std::int64_t dim = 0);
/// Joins equally shaped tensors along a new dim (in [-(ndim + 1), ndim]).
Tensor stack(const std::vector<Tensor>& tensors, std::int64_t dim = 0);

}  // namespace qgrad
