// deploy::compile_inference: turns a float model into a FloatInferenceModel, the eval-mode forward
// on oneDNN without autograd: each BatchNorm2d after a convolution folded into its weight and bias
// (BnAffine, in double, rounded once to float32), ReLU and ReLU6 fused as eltwise post-ops, each
// residual add fused into its block's last convolution as a sum post-op, activations kept in
// oneDNN's preferred (blocked) layouts between layers, and weights reordered once per input
// shape, when the layer's primitive is built. It is the float twin of quant::convert (the int8
// model of a QAT model) and walks the model the same way (deploy/common/module_walk.h).
//
// The model is a Sequential (nested ones are flattened) of Conv2d (+ BatchNorm2d) (+ ReLU or
// ReLU6), Linear (+ ReLU), ResNet BasicBlocks and MobileNetV2 InvertedResiduals (a plain nn::Add),
// MaxPool2d, AdaptiveAvgPool2d(1), Flatten before a Linear, and Identity / Dropout (dropped): every
// model of nn/models/zoo.h. Anything else (a quantized layer, a batch norm after no convolution, a
// lone activation, an nn::Graph) is a ValueError naming the layer, so callers can fall back to the
// module's forward. The compiled model always computes eval mode (running batch-norm statistics,
// no dropout), whatever the module's mode; the module is not modified and later changes to its
// weights are not seen.
//
// Agreement with the module's eval forward: folding the batch norm and oneDNN's blocked
// accumulation order change float rounding, not the function. Over every zoo model (random
// weights, randomised batch-norm statistics, batch 1 and 4 to 16) the largest logit difference
// measured is 6.8e-7 of the largest |logit|; tests/deploy/test_float_inference.cpp asserts 1e-5.
// The module's own forward stays the unfused reference path.
#pragma once

#include "deploy/float_inference/float_model.h"
#include "nn/module.h"

namespace qgrad::deploy {

FloatInferenceModel compile_inference(const nn::Module& model);

}  // namespace qgrad::deploy
