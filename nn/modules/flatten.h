/// @file
/// Flatten: merges dims start_dim..end_dim into one (defaults 1..-1, keeping the batch dim), as
/// torch.nn.Flatten.
#pragma once

#include <cstdint>
#include <string>

#include "nn/unary_module.h"

namespace qgrad::nn {

/// Flattens dimensions start_dim..end_dim into one, as torch.nn.Flatten.
class Flatten : public UnaryModule {
 public:
  /// Flattens dims start_dim..end_dim (negative counts from the end).
  explicit Flatten(std::int64_t start_dim = 1, std::int64_t end_dim = -1);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  /// The first flattened dim.
  std::int64_t start_dim() const { return start_dim_; }
  /// The last flattened dim.
  std::int64_t end_dim() const { return end_dim_; }

 private:
  std::int64_t start_dim_, end_dim_;
};

}  // namespace qgrad::nn
