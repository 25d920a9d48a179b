/// @file
/// Folding a batch norm into the convolution before it, for export and inference: with
/// s = gamma / sqrt(running_var + eps) per output channel,
///
///   W' = W * s[:, None, None, None]          b' = (b - running_mean) * s + beta   (b = 0 if none)
///
/// so conv2d(x, W', b') equals bn(conv2d(x, W, b)) with bn in eval mode (torch.nn.utils.
/// fuse_conv_bn_weights, and torch.ao's ConvBn2d.to_float). s is computed exactly as
/// QuantConvBn2d's forward computes it, so W' is bit for bit the tensor its weight quantizer saw:
/// the quantizer's scales apply to W' unchanged.
///
/// The results are new modules with their own tensors (nothing shared with the source, except the
/// quantizer modules of fold_quant_conv_bn), in the source's training mode, always with a bias.
/// The BN must be affine with running statistics and match the conv's output channels
/// (ValueError otherwise).
#pragma once

#include <memory>

#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"
#include "quant/modules/quant_conv2d.h"
#include "quant/modules/quant_conv_bn2d.h"

namespace qgrad::quant {

/// The float conv equal to bn(conv(x)) in eval mode.
std::shared_ptr<nn::Conv2d> fold_conv_bn(const nn::Conv2d& conv, const nn::BatchNorm2d& bn);
/// The float conv of a fused QAT layer (weights not quantized), as torch.ao's to_float().
std::shared_ptr<nn::Conv2d> fold_conv_bn(const QuantConvBn2d& fused);
/// A QuantConv2d with the folded weight and bias that shares `fused`'s input and weight quantizer
/// modules (with their trained scales), so that with bn in eval mode and the observers /
/// calibration off it computes what `fused` computes in eval mode.
std::shared_ptr<QuantConv2d> fold_quant_conv_bn(const QuantConvBn2d& fused);

}  // namespace qgrad::quant
