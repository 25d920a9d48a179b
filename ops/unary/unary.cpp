// Unary ops: allocation, device dispatch and backward rules (fused backward kernels, so a
// backward pass makes one pass over memory per op).
#include "ops/unary/unary.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "core/autograd/function.h"
#include "core/factory.h"
#include "ops/device_check.h"
#include "ops/unary/unary_kernels.h"

namespace qgrad {

const char* unary_op_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg:
      return "neg";
    case UnaryOp::Abs:
      return "abs";
    case UnaryOp::Sign:
      return "sign";
    case UnaryOp::Exp:
      return "exp";
    case UnaryOp::Log:
      return "log";
    case UnaryOp::Sqrt:
      return "sqrt";
    case UnaryOp::Relu:
      return "relu";
    case UnaryOp::LeakyRelu:
      return "leaky_relu";
    case UnaryOp::Hardtanh:
      return "hardtanh";
    case UnaryOp::Sigmoid:
      return "sigmoid";
    case UnaryOp::Tanh:
      return "tanh";
    case UnaryOp::Gelu:
      return "gelu";
    case UnaryOp::GeluTanh:
      return "gelu";
    case UnaryOp::Clamp:
      return "clamp";
  }
  return "unary";
}

void unary_kernel(UnaryOp op, const Tensor& x, const Tensor& out, double p0, double p1) {
  if (out.numel() == 0) return;
  static const KernelTable<UnaryKernel>& table = kernel_table(kUnaryKernels);
  table(unary_op_name(op), x)(op, x, out, p0, p1);
}

void unary_backward_kernel(UnaryOp op, const Tensor& g, const Tensor& x, const Tensor& y,
                           const Tensor& out, double p0, double p1) {
  if (out.numel() == 0) return;
  static const KernelTable<UnaryBackwardKernel>& table = kernel_table(kUnaryBackwardKernels);
  table(unary_op_name(op), g)(op, g, x, y, out, p0, p1);
}

namespace {

enum class Save { Input, Output, Nothing };

Save saved_for(UnaryOp op) {
  switch (op) {
    case UnaryOp::Exp:
    case UnaryOp::Sqrt:
    case UnaryOp::Relu:
    case UnaryOp::Sigmoid:
    case UnaryOp::Tanh:
      return Save::Output;
    case UnaryOp::Neg:
    case UnaryOp::Sign:
      return Save::Nothing;
    default:
      return Save::Input;
  }
}

std::string backward_name(UnaryOp op) {
  std::string n = unary_op_name(op);
  n[0] = static_cast<char>(std::toupper(n[0]));
  for (std::size_t i = 0; i < n.size(); ++i)
    if (n[i] == '_' && i + 1 < n.size()) n[i + 1] = static_cast<char>(std::toupper(n[i + 1]));
  n.erase(std::remove(n.begin(), n.end(), '_'), n.end());
  return n + "Backward";
}

Tensor apply(UnaryOp op, const Tensor& x, double p0 = 0, double p1 = 0) {
  const char* name = unary_op_name(op);
  require_defined(name, "input", x);
  const bool float_only = !(op == UnaryOp::Neg || op == UnaryOp::Abs || op == UnaryOp::Sign ||
                            op == UnaryOp::Relu || op == UnaryOp::Clamp);
  if (float_only) require_floating(name, "input", x);
  Tensor out = empty(x.shape(), TensorOptions().dtype(x.dtype()).device(x.device()));
  unary_kernel(op, x, out, p0, p1);
  if (!needs_grad({x})) return out;
  const Save what = saved_for(op);
  SavedTensor sx(what == Save::Input ? x : Tensor());
  SavedTensor sy(what == Save::Output ? out.detach() : Tensor());
  record(backward_name(op), {x}, {&out}, [=](const TensorList& g) {
    Tensor gx = empty(g[0].shape(), TensorOptions().dtype(g[0].dtype()).device(g[0].device()));
    Tensor xs = sx.get(), ys = sy.get();
    unary_backward_kernel(op, g[0], xs.defined() ? xs : g[0], ys.defined() ? ys : g[0], gx, p0, p1);
    return TensorList{gx};
  });
  return out;
}

}  // namespace

Tensor neg(const Tensor& x) {
  return apply(UnaryOp::Neg, x);
}
Tensor abs(const Tensor& x) {
  return apply(UnaryOp::Abs, x);
}
Tensor sign(const Tensor& x) {
  return apply(UnaryOp::Sign, x);
}
Tensor exp(const Tensor& x) {
  return apply(UnaryOp::Exp, x);
}
Tensor log(const Tensor& x) {
  return apply(UnaryOp::Log, x);
}
Tensor sqrt(const Tensor& x) {
  return apply(UnaryOp::Sqrt, x);
}
Tensor relu(const Tensor& x) {
  return apply(UnaryOp::Relu, x);
}
Tensor relu6(const Tensor& x) {
  require_floating("relu6", "input", x);
  return hardtanh(x, 0.0, 6.0);
}
Tensor leaky_relu(const Tensor& x, double slope) {
  return apply(UnaryOp::LeakyRelu, x, slope);
}
Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  QGRAD_CHECK(min_val <= max_val, ValueError, "hardtanh: min_val ", min_val,
              " must not exceed max_val ", max_val);
  return apply(UnaryOp::Hardtanh, x, min_val, max_val);
}
Tensor sigmoid(const Tensor& x) {
  return apply(UnaryOp::Sigmoid, x);
}
Tensor tanh(const Tensor& x) {
  return apply(UnaryOp::Tanh, x);
}
Tensor gelu(const Tensor& x, const std::string& approximate) {
  QGRAD_CHECK(approximate == "none" || approximate == "tanh", ValueError,
              "gelu: approximate must be 'none' or 'tanh', got '", approximate, "'");
  return apply(approximate == "none" ? UnaryOp::Gelu : UnaryOp::GeluTanh, x);
}
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max) {
  QGRAD_CHECK(min || max, ValueError, "clamp: at least one of min and max must be given");
  QGRAD_CHECK(!(min && std::isnan(*min)) && !(max && std::isnan(*max)), ValueError,
              "clamp: bounds must not be NaN");
  const double inf = std::numeric_limits<double>::infinity();
  const double lo = min.value_or(-inf), hi = max.value_or(inf);
  require_defined("clamp", "input", x);
  // A fractional bound makes an integer clamp a float32 one, as PyTorch's type promotion does.
  const bool fractional = (min && *min != std::floor(*min)) || (max && *max != std::floor(*max));
  if (!is_floating(x.dtype()) && fractional) return apply(UnaryOp::Clamp, x.to(kFloat32), lo, hi);
  return apply(UnaryOp::Clamp, x, lo, hi);
}

}  // namespace qgrad
