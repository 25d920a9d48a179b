/// @file
/// Broadcasting binary ops (differentiable where it makes sense): arithmetic, pow, maximum and
/// minimum, comparisons (uint8 results, 1 for true) and the C++ operators.
#pragma once

#include "core/tensor.h"

namespace qgrad {

/// The elementwise binary operations (the kernels' op codes).
enum class BinaryOp { Add, Sub, Mul, Div, Pow, Maximum, Minimum, Eq, Ne, Lt, Le, Gt, Ge };
/// The op's name ("add", "maximum", ...).
const char* binary_op_name(BinaryOp op);

/// a + b, broadcast.
Tensor add(const Tensor& a, const Tensor& b);
/// a - b, broadcast.
Tensor sub(const Tensor& a, const Tensor& b);
/// a * b, broadcast.
Tensor mul(const Tensor& a, const Tensor& b);
/// a / b, broadcast (true division).
Tensor div(const Tensor& a, const Tensor& b);
/// a raised to the power b, broadcast.
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);  ///< elementwise max; ties split the gradient
/// Elementwise min; ties split the gradient.
Tensor minimum(const Tensor& a, const Tensor& b);
/// a == b as uint8 (1 for true), broadcast.
Tensor eq(const Tensor& a, const Tensor& b);
/// a != b as uint8, broadcast.
Tensor ne(const Tensor& a, const Tensor& b);
/// a < b as uint8, broadcast.
Tensor lt(const Tensor& a, const Tensor& b);
/// a <= b as uint8, broadcast.
Tensor le(const Tensor& a, const Tensor& b);
/// a > b as uint8, broadcast.
Tensor gt(const Tensor& a, const Tensor& b);
/// a >= b as uint8, broadcast.
Tensor ge(const Tensor& a, const Tensor& b);

/// Scalar forms: the scalar takes the tensor's dtype (float32 for an int tensor and a
/// non-integral scalar), as in PyTorch.
Tensor add(const Tensor& a, double b);
/// a - b.
Tensor sub(const Tensor& a, double b);
/// a - b, scalar first.
Tensor sub(double a, const Tensor& b);
/// a * b.
Tensor mul(const Tensor& a, double b);
/// a / b.
Tensor div(const Tensor& a, double b);
/// a / b, scalar first.
Tensor div(double a, const Tensor& b);
/// a raised to the power `exponent`.
Tensor pow(const Tensor& a, double exponent);
/// Elementwise max(a, b).
Tensor maximum(const Tensor& a, double b);
/// Elementwise min(a, b).
Tensor minimum(const Tensor& a, double b);
/// a == b as uint8.
Tensor eq(const Tensor& a, double b);
/// a != b as uint8.
Tensor ne(const Tensor& a, double b);
/// a < b as uint8.
Tensor lt(const Tensor& a, double b);
/// a <= b as uint8.
Tensor le(const Tensor& a, double b);
/// a > b as uint8.
Tensor gt(const Tensor& a, double b);
/// a >= b as uint8.
Tensor ge(const Tensor& a, double b);

/// The dtype of a binary op's result, as torch.result_type: the promoted dtype of the operands,
/// except that a 0-d tensor only decides it when it is of a higher category (float over int)
/// than the other, dimensioned, operand (float32[3] + float64 0-d gives float32).
DType result_type(const Tensor& a, const Tensor& b);
/// The gradient `g` of a broadcast result, summed to an input's shape and cast to its dtype.
Tensor grad_for_input(const Tensor& g, const Shape& shape, DType dtype);

/// The 0-d tensor a scalar becomes when combined with `like`.
Tensor scalar_like(double v, const Tensor& like);

/// The raw kernel entry (no autograd): out = a op b for tensors of out's shape (a, b may be
/// broadcast views). Used by ops that need a plain elementwise result.
void binary_kernel(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);

/// add(a, b).
inline Tensor operator+(const Tensor& a, const Tensor& b) {
  return add(a, b);
}
/// sub(a, b).
inline Tensor operator-(const Tensor& a, const Tensor& b) {
  return sub(a, b);
}
/// mul(a, b).
inline Tensor operator*(const Tensor& a, const Tensor& b) {
  return mul(a, b);
}
/// div(a, b).
inline Tensor operator/(const Tensor& a, const Tensor& b) {
  return div(a, b);
}
/// add(a, b).
inline Tensor operator+(const Tensor& a, double b) {
  return add(a, b);
}
/// sub(a, b).
inline Tensor operator-(const Tensor& a, double b) {
  return sub(a, b);
}
/// mul(a, b).
inline Tensor operator*(const Tensor& a, double b) {
  return mul(a, b);
}
/// div(a, b).
inline Tensor operator/(const Tensor& a, double b) {
  return div(a, b);
}
/// add(b, a).
inline Tensor operator+(double a, const Tensor& b) {
  return add(b, a);
}
/// sub(a, b).
inline Tensor operator-(double a, const Tensor& b) {
  return sub(a, b);
}
/// mul(b, a).
inline Tensor operator*(double a, const Tensor& b) {
  return mul(b, a);
}
/// div(a, b).
inline Tensor operator/(double a, const Tensor& b) {
  return div(a, b);
}
/// neg(a).
Tensor operator-(const Tensor& a);

}  // namespace qgrad
