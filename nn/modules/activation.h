/// @file
/// Activation modules wrapping the elementwise ops of ops/unary: ReLU, ReLU6, LeakyReLU,
/// Hardtanh, Sigmoid, Tanh and GELU, with PyTorch's defaults and printouts.
#pragma once

#include <string>

#include "nn/unary_module.h"

namespace qgrad::nn {

/// max(x, 0), as torch.nn.ReLU.
class ReLU : public UnaryModule {
 public:
  ReLU() : UnaryModule("ReLU") {}
  /// relu(input).
  Tensor forward(const Tensor& input) override;
};

/// min(max(x, 0), 6), as torch.nn.ReLU6.
class ReLU6 : public UnaryModule {
 public:
  ReLU6() : UnaryModule("ReLU6") {}
  /// relu6(input).
  Tensor forward(const Tensor& input) override;
};

/// x, or negative_slope * x below 0, as torch.nn.LeakyReLU.
class LeakyReLU : public UnaryModule {
 public:
  /// A LeakyReLU with slope `negative_slope` below 0.
  explicit LeakyReLU(double negative_slope = 0.01);
  /// leaky_relu(input, negative_slope).
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  /// The slope below 0.
  double negative_slope() const { return negative_slope_; }

 private:
  double negative_slope_;
};

/// x clamped to [min_val, max_val], as torch.nn.Hardtanh.
class Hardtanh : public UnaryModule {
 public:
  /// Throws ValueError unless max_val > min_val.
  explicit Hardtanh(double min_val = -1.0, double max_val = 1.0);
  /// hardtanh(input, min_val, max_val).
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  /// The lower bound.
  double min_val() const { return min_val_; }
  /// The upper bound.
  double max_val() const { return max_val_; }

 private:
  double min_val_, max_val_;
};

/// 1 / (1 + e^-x), as torch.nn.Sigmoid.
class Sigmoid : public UnaryModule {
 public:
  Sigmoid() : UnaryModule("Sigmoid") {}
  /// sigmoid(input).
  Tensor forward(const Tensor& input) override;
};

/// tanh(x), as torch.nn.Tanh.
class Tanh : public UnaryModule {
 public:
  Tanh() : UnaryModule("Tanh") {}
  /// tanh(input).
  Tensor forward(const Tensor& input) override;
};

/// The Gaussian error linear unit, as torch.nn.GELU.
class GELU : public UnaryModule {
 public:
  /// approximate: "none" (exact, erf) or "tanh"; anything else throws ValueError.
  explicit GELU(std::string approximate = "none");
  /// gelu(input, approximate).
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  /// "none" or "tanh".
  const std::string& approximate() const { return approximate_; }

 private:
  std::string approximate_;
};

}  // namespace qgrad::nn
