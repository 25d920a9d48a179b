// Elementwise unary ops and activations, all differentiable: neg, abs, sign, exp, log, sqrt,
// relu, relu6, leaky_relu, hardtanh, sigmoid, tanh, gelu (exact or tanh approximation), clamp.
#pragma once

#include <optional>

#include "core/tensor.h"

namespace qgrad {

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
const char* unary_op_name(UnaryOp op);

Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);  // no gradient (zero almost everywhere)
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor relu6(const Tensor& x);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
// approximate: "none" (erf form) or "tanh", as torch.nn.functional.gelu.
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
// Gradient flows where min <= x <= max (inclusive), as torch.clamp.
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max);

// Raw kernels (no autograd). p0/p1 are the op's parameters (slope, bounds).
void unary_kernel(UnaryOp op, const Tensor& x, const Tensor& out, double p0 = 0, double p1 = 0);
// out = d op / dx * g, from g and the saved input x and/or output y.
void unary_backward_kernel(UnaryOp op, const Tensor& g, const Tensor& x, const Tensor& y,
                           const Tensor& out, double p0 = 0, double p1 = 0);

}  // namespace qgrad
