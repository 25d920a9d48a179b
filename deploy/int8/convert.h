// quant::convert: turns a trained quantization-aware model into an integer model that runs on
// oneDNN's int8 primitives (Int8Model). It reads the model exactly as the ONNX exporter lowers
// it, with the same shared helpers (deploy/common): each quantizer's scale, zero point and grid
// as its family defines them (QdqParams), weights put on their integer grid by the family's own
// kernel, batch norms folded (BnAffine; QuantConvBn2d through quant::fold_quant_conv_bn).
//
// The model is a Sequential (nested ones are flattened) of QuantConv2d / QuantConvBn2d /
// QuantLinear layers, each optionally followed by a BatchNorm2d (after a QuantConv2d: folded into
// the per-channel output scales and the bias) and a ReLU (fused), ResNet BasicBlocks whose add
// is a QuantAdd (Int8BasicBlock: int8 convolutions and an int8 add), with MaxPool2d, Flatten,
// Identity and Dropout (dropped) between them and AdaptiveAvgPool2d(1) before the classifier.
// Each quantized layer requantizes its output straight onto the grid of the next quantizer of
// that tensor, so the int8 model computes what the fake-quantized model computes (max pooling
// and ReLU commute with the quantizer); where the QAT model computes in float before its next
// quantizer (the global average pool of ResNet's last block) the int8 model does too, and the
// last layer's output, with no quantizer after it, is float32 (the logits). A residual block's
// input is quantized by conv1's and the shortcut's quantizers, which must agree (they observe
// the same tensor).
//
// An nn::Graph (an imported ONNX model) converts to an Int8Graph with the same layers over the
// graph's values (convert_graph.cpp): each value is written on the grid of the quantizers that
// read it, which must agree; a float BatchNorm2d, ReLU / ReLU6 or (after a direct convolution)
// MaxPool2d is fused into the layer before it when it is that output's only reader; a QuantAdd
// is an Int8Add (fuse_residual_sum does not apply).
//
// Maps to int8: torch.ao FakeQuantize / FusedMovingAvgObsFakeQuantize (quint8 or qint8 affine
// per-tensor inputs, reduce_range included; qint8 symmetric weights, per channel or per tensor),
// pytorch_quantization TensorQuantizer with static amax (int8 symmetric, amax / 127), LSQ /
// LSQ+ LearnableFakeQuantize (its learned scale and rounded zero point: an affine uint8 / int8
// grid, quant::lsq_qdq_params), Horizon and AIMET quantizers, PACT activations and DoReFa weights
// (quant/modules/qdq_params.h says how each maps). Integer grids narrower than 8 bits
// (reduce_range, num_bits < 8, narrow_range, LSQ's W4A4) map exactly: the weights are already on
// them and activations are clipped to them. Everything else is a ValueError naming the layer: a
// float Conv2d / Linear (excluded from quantization) or a missing input quantizer, weights with a
// nonzero zero point or an unsigned grid, per-channel activation quantizers, FP8, block
// quantization, dynamic amax, grids wider than 8 bits, residual adds left float (recipe "add":
// false) and any other module. The model is not modified.
#pragma once

#include "deploy/int8/int8_model.h"
#include "nn/module.h"

namespace qgrad::quant {

struct ConvertOptions {
  // Fuses each residual add into its block's second convolution as oneDNN's sum post-op
  // (Int8Conv2d with a residual) instead of a separate Int8Add: one pass over the block output
  // less, but not the QAT model's arithmetic, since QuantAdd rounds the convolution output to
  // its input-0 grid before adding and the fused form adds it unrounded (up to half a step of
  // that grid apart). Blocks whose output stays float32 (before the global average pool) keep
  // the separate add.
  bool fuse_residual_sum = false;
  // Convolutions with few inputs and outputs (Int8DirectConv2d::preferred: a grey image's first
  // layer, lenet5bn's 1 -> 6) run qgrad's direct kernel, with a max pool right after them fused
  // and, as the model's first layer, the input's quantization too, instead of oneDNN's int8
  // convolution and pooling; the grid values are the same. false: always oneDNN.
  bool direct_conv = true;
};

Int8Model convert(const nn::Module& model, const ConvertOptions& options = ConvertOptions());

}  // namespace qgrad::quant
