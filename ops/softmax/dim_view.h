// DimView: a strided tensor seen as a 3-D block [outer, size, inner] around one dimension, the
// geometry shared by every kernel that works "along a dim" (softmax, log_softmax and the fused
// cross-entropy kernels). Merging the dims before and after `dim` lets one kernel handle any
// rank and many non-contiguous layouts without a copy.
#pragma once

#include <cstdint>
#include <optional>

#include "core/tensor.h"

namespace qgrad {

struct DimView {
  std::int64_t outer = 1, size = 1, inner = 1;
  std::int64_t outer_stride = 0, size_stride = 0, inner_stride = 0;  // in elements
};

// Views `t` as [prod(shape[:dim]), shape[dim], prod(shape[dim+1:])] with one stride per part.
// Returns nullopt when the dims before or after `dim` cannot be merged into a single stride
// (callers then make the tensor contiguous). A 0-d tensor is treated as shape [1].
std::optional<DimView> dim_view(const Tensor& t, std::int64_t dim);

// dim_view of `t`, or of a contiguous copy of it when the strides do not merge; `storage`
// receives the tensor the view refers to (t itself or the copy).
DimView dim_view_or_copy(const Tensor& t, std::int64_t dim, Tensor& storage);

}  // namespace qgrad
