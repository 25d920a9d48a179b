/// @file
/// Linear: the fully connected layer y = x W^T + b, as torch.nn.Linear, with weight
/// [out_features, in_features] and optional bias [out_features].
///
/// Initialisation: every layer with random initial weights takes the Generator to draw them
/// from as a constructor argument (there is no hidden global generator), and draws exactly as
/// PyTorch's reset_parameters does: weight from kaiming_uniform_(a = sqrt(5)), i.e.
/// U(-1/sqrt(fan_in), 1/sqrt(fan_in)), then bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
/// Building the same layers in the same order from a Generator with the same seed therefore
/// gives bit-identical weights on every run.
#pragma once

#include <cstdint>
#include <string>

#include "core/generator.h"
#include "nn/unary_module.h"

namespace qgrad::nn {

/// Options with chainable setters, as libtorch's: Linear(LinearOptions(256, 120).bias(false), gen)
struct LinearOptions {
  /// in_features -> out_features, with a bias.
  LinearOptions(std::int64_t in_features, std::int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  /// Sets whether the layer has a bias.
  LinearOptions& bias(bool b) {
    bias_ = b;
    return *this;
  }

  std::int64_t in_features_;   ///< input features
  std::int64_t out_features_;  ///< output features
  bool bias_ = true;           ///< whether the layer has a bias
};

/// y = x W^T + b, as torch.nn.Linear: weight [out, in], optional bias [out].
class Linear : public UnaryModule {
 public:
  /// Throws ValueError for negative feature counts.
  Linear(const LinearOptions& options, Generator& gen);
  /// in_features -> out_features with a bias, initialised from `gen`.
  Linear(std::int64_t in_features, std::int64_t out_features, Generator& gen)
      : Linear(LinearOptions(in_features, out_features), gen) {}

  /// x [*, in_features] -> [*, out_features].
  Tensor forward(const Tensor& input) override;
  /// Re-draws weight and bias from `gen` as the constructor does.
  void reset_parameters(Generator& gen);
  /// "in_features=256, out_features=120, bias=True"
  std::string extra_repr() const override;

  /// The options.
  const LinearOptions& options() const { return options_; }
  /// The weight [out_features, in_features].
  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }  ///< undefined without bias

 private:
  LinearOptions options_;
  Tensor weight_, bias_;
};

}  // namespace qgrad::nn
