/// @file
/// Dropout: inverted dropout as torch.nn.Dropout; zeroes each element with probability p in
/// training mode and scales the rest by 1 / (1 - p), and is the identity in evaluation mode.
///
/// Randomness: the layer owns its Generator, so its masks do not depend on what else draws
/// random numbers. Construct it from a seed, or from a parent Generator, from which it takes
/// one 64-bit seed (advancing the parent): a model built from one seeded Generator thus gets
/// distinct, reproducible mask streams for each Dropout layer.
#pragma once

#include <cstdint>
#include <string>

#include "core/generator.h"
#include "nn/unary_module.h"

namespace qgrad::nn {

/// Zeroes each element with probability p in training mode and scales the rest by 1/(1-p), as
/// torch.nn.Dropout; the identity in eval mode.
class Dropout : public UnaryModule {
 public:
  /// p in [0, 1], else ValueError.
  Dropout(double p, std::uint64_t seed);
  /// Dropout with probability `p`, its generator seeded from `parent` (which advances).
  Dropout(double p, Generator& parent);

  Tensor forward(const Tensor& input) override;
  /// "p=0.5, inplace=False" (qgrad has no in-place variant; the text matches PyTorch's).
  std::string extra_repr() const override;

  /// The drop probability.
  double p() const { return p_; }
  /// The layer's own generator (e.g. to re-seed it, or to save and restore its offset).
  Generator& generator() { return gen_; }

 private:
  double p_;
  Generator gen_;
};

}  // namespace qgrad::nn
