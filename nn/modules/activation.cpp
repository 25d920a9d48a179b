// Activation modules: thin wrappers over ops/unary with argument checks and printouts.
#include "nn/modules/activation.h"

#include "nn/repr_format.h"
#include "ops/unary/unary.h"

namespace qgrad::nn {

Tensor ReLU::forward(const Tensor& input) {
  return relu(input);
}

Tensor ReLU6::forward(const Tensor& input) {
  return relu6(input);
}

LeakyReLU::LeakyReLU(double negative_slope)
    : UnaryModule("LeakyReLU"), negative_slope_(negative_slope) {}

Tensor LeakyReLU::forward(const Tensor& input) {
  return leaky_relu(input, negative_slope_);
}

std::string LeakyReLU::extra_repr() const {
  return "negative_slope=" + py_float(negative_slope_);
}

Hardtanh::Hardtanh(double min_val, double max_val)
    : UnaryModule("Hardtanh"), min_val_(min_val), max_val_(max_val) {
  QGRAD_CHECK(max_val > min_val, ValueError,
              "Hardtanh: expected max_val > min_val, got min_val=", min_val, " max_val=", max_val);
}

Tensor Hardtanh::forward(const Tensor& input) {
  return hardtanh(input, min_val_, max_val_);
}

std::string Hardtanh::extra_repr() const {
  return "min_val=" + py_float(min_val_) + ", max_val=" + py_float(max_val_);
}

Tensor Sigmoid::forward(const Tensor& input) {
  return sigmoid(input);
}

Tensor Tanh::forward(const Tensor& input) {
  return tanh(input);
}

GELU::GELU(std::string approximate) : UnaryModule("GELU"), approximate_(std::move(approximate)) {
  QGRAD_CHECK(approximate_ == "none" || approximate_ == "tanh", ValueError,
              "GELU: approximate must be 'none' or 'tanh', got '", approximate_, "'");
}

Tensor GELU::forward(const Tensor& input) {
  return gelu(input, approximate_);
}

std::string GELU::extra_repr() const {
  return "approximate='" + approximate_ + "'";
}

}  // namespace qgrad::nn
