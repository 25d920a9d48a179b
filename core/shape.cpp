// Shape and stride arithmetic.
#include "core/shape.h"

#include <algorithm>

#include "core/error.h"

namespace qgrad {

std::int64_t numel_of(const Shape& shape) {
  std::int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape st(shape.size());
  std::int64_t acc = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    st[i] = acc;
    acc *= std::max<std::int64_t>(shape[i], 1);
  }
  return st;
}

std::string shape_str(const Shape& shape) {
  return detail::concat(shape);
}

std::int64_t wrap_dim(std::int64_t dim, std::int64_t ndim, const char* op) {
  std::int64_t lo = -std::max<std::int64_t>(ndim, 1), hi = std::max<std::int64_t>(ndim, 1) - 1;
  QGRAD_CHECK(dim >= lo && dim <= hi, IndexError, op, ": dimension ", dim,
              " out of range (expected to be in [", lo, ", ", hi, "])");
  return dim < 0 ? dim + std::max<std::int64_t>(ndim, 1) : dim;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  std::size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    std::int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    QGRAD_CHECK(da == db || da == 1 || db == 1, ShapeError, op, ": shapes ", a, " and ", b,
                " cannot be broadcast together");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace qgrad
