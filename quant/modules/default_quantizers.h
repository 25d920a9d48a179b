/// @file
/// The NVIDIA default quantizers of pytorch_quantization's quant_nn layers: an 8-bit per-tensor
/// input TensorQuantizer (QUANT_DESC_8BIT_PER_TENSOR) and an 8-bit per-output-channel weight
/// TensorQuantizer (axis 0: QUANT_DESC_8BIT_CONV2D_WEIGHT_PER_CHANNEL /
/// QUANT_DESC_8BIT_LINEAR_WEIGHT_PER_ROW) whose amax is sized [O, 1, ...] from the weight shape.
#pragma once

#include <memory>

#include "core/shape.h"
#include "nn/unary_module.h"

namespace qgrad::quant {

/// pytorch_quantization's default input quantizer: an 8-bit per-tensor TensorQuantizer.
std::shared_ptr<nn::UnaryModule> default_input_quantizer();
/// The default weight quantizer: an 8-bit TensorQuantizer per output channel (axis 0), its amax
/// sized [O, 1, ...] from weight_shape.
std::shared_ptr<nn::UnaryModule> default_weight_quantizer(const Shape& weight_shape);

}  // namespace qgrad::quant
