/// @file
/// Shape and stride arithmetic shared by tensors and ops: element counts, contiguous strides,
/// dimension wrapping, broadcasting of two shapes, and the overflow-checked validation of a shape
/// that comes from outside (a file header, a user argument) before anything is allocated for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace qgrad {

/// The sizes (or strides) of a tensor's dimensions.
using Shape = std::vector<std::int64_t>;

/// Product of the dims. Throws ShapeError("numel_of: ...") when it overflows int64.
std::int64_t numel_of(const Shape& shape);
/// Row-major strides (products of max(dim, 1) of the later dims). Throws ShapeError
/// ("contiguous_strides: ...") when the product of max(dim, 1) over all dims overflows int64.
Shape contiguous_strides(const Shape& shape);
/// "[2, 3]".
std::string shape_str(const Shape& shape);
/// Wraps a possibly negative dim into [0, ndim); throws IndexError naming `op` when out of range.
std::int64_t wrap_dim(std::int64_t dim, std::int64_t ndim, const char* op);
/// Broadcast result of two shapes (numpy rules); throws ShapeError naming `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

/// The sizes of a contiguous tensor of `shape`, or why it cannot exist. Valid means: every dim is
/// >= 0, and the product of max(dim, 1) over all dims (which bounds every stride, so a leading 0
/// cannot hide huge later dims), the element count and the byte count all fit in int64.
struct ShapeSize {
  /// Whether the shape is valid, and if not why.
  enum class Status { kOk, kNegative, kOverflow };
  Status status = Status::kOk;  ///< kOk, or why the shape is invalid
  std::int64_t numel = 0;       ///< the element count (valid shapes only)
  std::int64_t nbytes = 0;      ///< the byte count (valid shapes only)
  /// Empty when kOk; otherwise e.g. "has negative dimension -3" or "overflows int64 (...)".
  std::string problem;
  /// True for a valid shape.
  bool ok() const { return status == Status::kOk; }
};
/// The sizes of a contiguous tensor of `shape` with elements of `element_size` bytes, or why it
/// cannot exist.
ShapeSize shape_size(const Shape& shape, std::size_t element_size);
/// The checked element count: throws ShapeError("<op>: shape [..] <problem>") unless
/// shape_size(shape, element_size).ok(). Loaders call shape_size and throw IOError instead.
std::int64_t checked_numel(const Shape& shape, std::size_t element_size, const char* op);

}  // namespace qgrad
