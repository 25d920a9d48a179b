/// @file
/// Elementwise unary ops and activations, all differentiable: neg, abs, sign, exp, log, sqrt,
/// relu, relu6, leaky_relu, hardtanh, sigmoid, tanh, gelu (exact or tanh approximation), clamp.
#pragma once

#include <optional>

#include "core/tensor.h"

namespace qgrad {

/// The elementwise unary operations (the kernels' op codes).
enum class UnaryOp {
  Neg,
  Abs,
  Sign,
  Exp,
  Log,
  Sqrt,
  Relu,
  LeakyRelu,
  Hardtanh,
  Sigmoid,
  Tanh,
  Gelu,
  GeluTanh,
  Clamp
};
/// The op's name ("neg", "relu", ...).
const char* unary_op_name(UnaryOp op);

/// -x.
Tensor neg(const Tensor& x);
/// |x|.
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);  ///< no gradient (zero almost everywhere)
/// e^x.
Tensor exp(const Tensor& x);
/// Natural logarithm.
Tensor log(const Tensor& x);
/// Square root.
Tensor sqrt(const Tensor& x);
/// max(x, 0).
Tensor relu(const Tensor& x);
/// min(max(x, 0), 6).
Tensor relu6(const Tensor& x);
/// x where x >= 0, negative_slope * x elsewhere.
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
/// x clamped to [min_val, max_val].
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0);
/// 1 / (1 + e^-x).
Tensor sigmoid(const Tensor& x);
/// Hyperbolic tangent.
Tensor tanh(const Tensor& x);
/// approximate: "none" (erf form) or "tanh", as torch.nn.functional.gelu.
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
/// Gradient flows where min <= x <= max (inclusive), as torch.clamp.
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max);

/// Raw kernels (no autograd). p0/p1 are the op's parameters (slope, bounds).
void unary_kernel(UnaryOp op, const Tensor& x, const Tensor& out, double p0 = 0, double p1 = 0);
/// out = d op / dx * g, from g and the saved input x and/or output y.
void unary_backward_kernel(UnaryOp op, const Tensor& g, const Tensor& x, const Tensor& y,
                           const Tensor& out, double p0 = 0, double p1 = 0);

}  // namespace qgrad
