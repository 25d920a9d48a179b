// Shape and stride arithmetic. Every product is overflow-checked (__builtin_mul_overflow):
// shapes reach here from file headers and user arguments, and signed overflow is undefined.
#include "core/shape.h"

#include <algorithm>

#include "core/error.h"

namespace qgrad {

std::int64_t numel_of(const Shape& shape) {
  std::int64_t n = 1;
  for (auto s : shape)
    QGRAD_CHECK(!__builtin_mul_overflow(n, s, &n), ShapeError,
                "numel_of: the element count of shape ", shape, " overflows int64");
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape st(shape.size());
  std::int64_t acc = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    st[i] = acc;
    QGRAD_CHECK(!__builtin_mul_overflow(acc, std::max<std::int64_t>(shape[i], 1), &acc), ShapeError,
                "contiguous_strides: the strides of shape ", shape, " overflow int64");
  }
  return st;
}

ShapeSize shape_size(const Shape& shape, std::size_t element_size) {
  ShapeSize r;
  std::int64_t span = 1, numel = 1, nbytes = 0;
  for (auto d : shape) {
    if (d < 0) {
      r.status = ShapeSize::Status::kNegative;
      r.problem = detail::concat("has negative dimension ", d);
      return r;
    }
    // numel <= span, so once span fits, numel does too.
    if (__builtin_mul_overflow(span, std::max<std::int64_t>(d, 1), &span)) {
      r.status = ShapeSize::Status::kOverflow;
      r.problem = "overflows int64 (the product of its non-zero dimensions is too large)";
      return r;
    }
    numel *= d;
  }
  if (__builtin_mul_overflow(numel, static_cast<std::int64_t>(element_size), &nbytes)) {
    r.status = ShapeSize::Status::kOverflow;
    r.problem =
        detail::concat("overflows int64 (", numel, " elements of ", element_size, " bytes)");
    return r;
  }
  r.numel = numel;
  r.nbytes = nbytes;
  return r;
}

std::int64_t checked_numel(const Shape& shape, std::size_t element_size, const char* op) {
  const ShapeSize s = shape_size(shape, element_size);
  QGRAD_CHECK(s.ok(), ShapeError, op, ": shape ", shape, " ", s.problem);
  return s.numel;
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
