// Flatten module: Tensor::flatten over the configured dim range.
#include "nn/modules/flatten.h"

namespace qgrad::nn {

Flatten::Flatten(std::int64_t start_dim, std::int64_t end_dim)
    : UnaryModule("Flatten"), start_dim_(start_dim), end_dim_(end_dim) {}

Tensor Flatten::forward(const Tensor& input) {
  return input.flatten(start_dim_, end_dim_);
}

std::string Flatten::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim_) + ", end_dim=" + std::to_string(end_dim_);
}

}  // namespace qgrad::nn
