// Linear layer: parameters, PyTorch's default initialisation and forward through ops/matmul.
#include "nn/modules/linear.h"

#include <cmath>

#include "core/factory.h"
#include "nn/init.h"
#include "nn/repr_format.h"
#include "ops/matmul/matmul.h"

namespace qgrad::nn {

Linear::Linear(const LinearOptions& options, Generator& gen)
    : UnaryModule("Linear"), options_(options) {
  QGRAD_CHECK(options.in_features_ >= 0 && options.out_features_ >= 0, ValueError,
              "Linear: in_features and out_features must be non-negative, got in_features=",
              options.in_features_, ", out_features=", options.out_features_);
  weight_ = register_parameter("weight", empty({options.out_features_, options.in_features_}));
  bias_ = register_parameter("bias", options.bias_ ? empty({options.out_features_}) : Tensor());
  reset_parameters(gen);
}

void Linear::reset_parameters(Generator& gen) {
  init::kaiming_uniform_(weight_, gen, std::sqrt(5.0));
  if (bias_.defined()) {
    const auto fan_in = init::calculate_fan_in_and_fan_out(weight_).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias_, gen, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& input) {
  QGRAD_CHECK(
      input.defined() && input.dim() >= 1 && input.size(-1) == options_.in_features_, ShapeError,
      "Linear: expected an input whose last dim is in_features=", options_.in_features_,
      ", got shape ", input.defined() ? shape_str(input.shape()) : std::string("(undefined)"));
  return linear(input, weight_, bias_);
}

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(options_.in_features_) +
         ", out_features=" + std::to_string(options_.out_features_) +
         ", bias=" + py_bool(bias_.defined());
}

}  // namespace qgrad::nn
