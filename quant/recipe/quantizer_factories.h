/// @file
/// QuantizerFactories: what a family's resolved quantizer settings build, a factory of fresh
/// quantizer modules for the weights (sized from the weight's shape) or for the inputs of a
/// layer, and the role (weight or input) the settings are for, which sets the family's defaults
/// and what is allowed (per-channel inputs are not). weight_axis() normalises an axis of a weight
/// with an error naming the recipe key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/shape.h"
#include "nn/unary_module.h"

namespace qgrad::quant {

/// Which operand of a layer a quantizer is for: its weight or its input.
enum class QuantRole { Weight, Input };
/// "weight", "input": the recipe's key of the role.
const char* quant_role_name(QuantRole role);

/// Builds a quantizer for a weight of the given shape ([O, I] or [O, I/groups, kh, kw]).
using WeightQuantizerFactory = std::function<std::shared_ptr<nn::UnaryModule>(const Shape&)>;
/// Builds a quantizer for a layer's input.
using InputQuantizerFactory = std::function<std::shared_ptr<nn::UnaryModule>()>;

/// One of the two is set, the one of the role the settings were built for.
struct QuantizerFactories {
  WeightQuantizerFactory weight;  ///< set for QuantRole::Weight
  InputQuantizerFactory input;    ///< set for QuantRole::Input
};

/// Axis a of a weight of rank `rank`, normalised; ValueError naming `what` (a quoted key path).
std::int64_t weight_axis(std::int64_t a, std::size_t rank, const std::string& what);

}  // namespace qgrad::quant
