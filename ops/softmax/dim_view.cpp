// Merging of the dims around one dimension into a 3-D [outer, size, inner] strided view.
#include "ops/softmax/dim_view.h"

namespace qgrad {

namespace {

// Merges dims [b, e) of `t` into one (count, stride); false when their strides do not chain.
bool merge_dims(const Tensor& t, std::int64_t b, std::int64_t e, std::int64_t& count,
                std::int64_t& stride) {
  count = 1;
  stride = 1;
  bool have = false;
  for (std::int64_t d = e; d-- > b;) {  // innermost first
    const std::int64_t n = t.shape()[d];
    if (n == 1) continue;
    if (!have) {
      stride = t.strides()[d];
      have = true;
    } else if (t.strides()[d] != stride * count) {
      return false;
    }
    // stride stays the innermost merged stride; count grows.
    count *= n;
  }
  return true;
}

}  // namespace

std::optional<DimView> dim_view(const Tensor& t, std::int64_t dim) {
  DimView v;
  if (t.dim() == 0) return v;
  if (!merge_dims(t, 0, dim, v.outer, v.outer_stride)) return std::nullopt;
  if (!merge_dims(t, dim + 1, t.dim(), v.inner, v.inner_stride)) return std::nullopt;
  v.size = t.shape()[dim];
  v.size_stride = t.strides()[dim];
  return v;
}

DimView dim_view_or_copy(const Tensor& t, std::int64_t dim, Tensor& storage) {
  if (auto v = dim_view(t, dim)) {
    storage = t;
    return *v;
  }
  storage = t.contiguous();
  return *dim_view(storage, dim);
}

}  // namespace qgrad
