// Shape and stride arithmetic shared by tensors and ops: element counts, contiguous strides,
// dimension wrapping, broadcasting of two shapes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qgrad {

using Shape = std::vector<std::int64_t>;

std::int64_t numel_of(const Shape& shape);
Shape contiguous_strides(const Shape& shape);
std::string shape_str(const Shape& shape);
// Wraps a possibly negative dim into [0, ndim); throws IndexError naming `op` when out of range.
std::int64_t wrap_dim(std::int64_t dim, std::int64_t ndim, const char* op);
// Broadcast result of two shapes (numpy rules); throws ShapeError naming `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace qgrad
