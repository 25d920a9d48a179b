// Activation modules wrapping the elementwise ops of ops/unary: ReLU, ReLU6, LeakyReLU,
// Hardtanh, Sigmoid, Tanh and GELU, with PyTorch's defaults and printouts.
#pragma once

#include <string>

#include "nn/unary_module.h"

namespace qgrad::nn {

class ReLU : public UnaryModule {
 public:
  ReLU() : UnaryModule("ReLU") {}
  Tensor forward(const Tensor& input) override;
};

class ReLU6 : public UnaryModule {
 public:
  ReLU6() : UnaryModule("ReLU6") {}
  Tensor forward(const Tensor& input) override;
};

class LeakyReLU : public UnaryModule {
 public:
  explicit LeakyReLU(double negative_slope = 0.01);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double negative_slope() const { return negative_slope_; }

 private:
  double negative_slope_;
};

class Hardtanh : public UnaryModule {
 public:
  // Throws ValueError unless max_val > min_val.
  explicit Hardtanh(double min_val = -1.0, double max_val = 1.0);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double min_val() const { return min_val_; }
  double max_val() const { return max_val_; }

 private:
  double min_val_, max_val_;
};

class Sigmoid : public UnaryModule {
 public:
  Sigmoid() : UnaryModule("Sigmoid") {}
  Tensor forward(const Tensor& input) override;
};

class Tanh : public UnaryModule {
 public:
  Tanh() : UnaryModule("Tanh") {}
  Tensor forward(const Tensor& input) override;
};

class GELU : public UnaryModule {
 public:
  // approximate: "none" (exact, erf) or "tanh"; anything else throws ValueError.
  explicit GELU(std::string approximate = "none");
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  const std::string& approximate() const { return approximate_; }

 private:
  std::string approximate_;
};

}  // namespace qgrad::nn
