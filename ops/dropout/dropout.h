/// @file
/// Inverted dropout, differentiable: in training mode each element is zeroed with probability p
/// and the survivors are scaled by 1 / (1 - p), so eval mode is the identity. The mask comes from
/// an explicit Generator (counter-based Philox), so a seed reproduces it exactly, independent of
/// the thread count; the backward pass regenerates the same mask instead of storing it.
#pragma once

#include "core/generator.h"
#include "core/tensor.h"

namespace qgrad {

/// p in [0, 1] (p = 1 gives zeros). training = false returns x itself and draws nothing;
/// otherwise advances `gen` by x.numel() draws.
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen);

}  // namespace qgrad
