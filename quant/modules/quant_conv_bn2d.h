/// @file
/// QuantConvBn2d: a Conv2d and the BatchNorm2d after it trained as one quantized layer, as
/// torch.ao.nn.intrinsic.qat.ConvBn2d (Jacob et al. 2018, Krishnamoorthi 2018): the weight is
/// quantized in the folded form it will have after export, W * gamma / sigma_running, and the
/// convolution output is scaled back before the real batch norm runs (torch.ao's
/// _forward_approximate):
///
///   s = bn.weight / sqrt(bn.running_var + bn.eps)          per output channel
///   y = conv2d(input_quantizer(x), weight_quantizer(W * s[:, None, None, None])) / s[None, :,
///   None, None] y = y + b (the conv bias, when present);  out = bn(y)
///
/// bn normalises with batch statistics and updates its running statistics in training (exactly
/// nn::BatchNorm2d, which it is) and uses the running statistics in eval mode or once
/// freeze_bn_stats() was called. Everything is differentiable through the existing ops (the
/// gradient reaches gamma through s as well as through bn). The ReLU of torch.ao's ConvBnReLU2d
/// is not folded in: it stays the separate nn::ReLU module that follows (the math is the same, as
/// torch.ao applies F.relu to the ConvBn2d output, and the module tree keeps its names).
///
/// from_float() converts a trained nn::Conv2d and the nn::BatchNorm2d after it: the conv's weight
/// and bias tensors are shared and the BatchNorm2d module itself becomes the child "bn", so its
/// parameters and running statistics are shared too. The BN must be affine with running
/// statistics and have out_channels features (ValueError otherwise).
///
/// State dict (torch.ao's ConvBn2d layout, with qgrad's quantizer names): "weight", "bias" (when
/// the conv has one), "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
/// "bn.num_batches_tracked", then "_input_quantizer.*" and "_weight_quantizer.*". Whether BN is
/// frozen is a mode, like training, and is not saved.
///
/// Differences from torch.ao: train(mode) still reaches the quantizers while BN is frozen (torch.ao
/// skips every child then; qgrad's quantizers do not depend on the mode), and update_bn_stats()
/// puts bn back into this module's own mode instead of always into training mode. A zero entry of
/// s (gamma == 0) is a ValueError instead of NaN outputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/generator.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"
#include "nn/unary_module.h"

namespace qgrad::quant {

/// torch.ao's ConvBn2d (QAT): a convolution with its batch norm folded into the quantized
/// weight (see the file comment).
class QuantConvBn2d : public nn::UnaryModule {
 public:
  /// Shares conv's weight and bias and takes bn as the child "bn" (see from_float).
  QuantConvBn2d(const nn::Conv2d& conv, std::shared_ptr<nn::BatchNorm2d> bn,
                std::shared_ptr<nn::UnaryModule> input_quantizer,
                std::shared_ptr<nn::UnaryModule> weight_quantizer);
  /// A fresh layer: nn::Conv2d(conv_options, gen) and nn::BatchNorm2d(bn_options) (gamma 1,
  /// beta 0, as nn::BatchNorm2d; torch.ao draws gamma from U(0, 1) here).
  QuantConvBn2d(const nn::Conv2dOptions& conv_options, const nn::BatchNormOptions& bn_options,
                Generator& gen, std::shared_ptr<nn::UnaryModule> input_quantizer,
                std::shared_ptr<nn::UnaryModule> weight_quantizer);

  /// The new layer takes conv's training mode (bn follows it).
  static std::shared_ptr<QuantConvBn2d> from_float(
      const nn::Conv2d& conv, std::shared_ptr<nn::BatchNorm2d> bn,
      std::shared_ptr<nn::UnaryModule> input_quantizer,
      std::shared_ptr<nn::UnaryModule> weight_quantizer);

  /// x [N, C_in, H, W] (or unbatched [C_in, H, W], run as a batch of one).
  Tensor forward(const Tensor& input) override;
  /// The conv's: "3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False"
  std::string extra_repr() const override;

  /// Sets the mode of this module and its children; bn stays in eval mode while frozen.
  void train(bool on = true) override;
  /// bn uses (and no longer updates) its running statistics, also in training mode.
  void freeze_bn_stats();
  /// bn follows this module's mode again.
  void update_bn_stats();
  /// Whether the bn statistics are frozen.
  bool bn_frozen() const { return bn_frozen_; }

  /// The per-channel factor s = bn.weight / sqrt(bn.running_var + bn.eps) of the forward pass
  /// (differentiable in bn.weight).
  Tensor scale_factor() const;

  const nn::Conv2dOptions& options() const { return options_; }  ///< spatial values as {h, w}
  /// The conv weight [C_out, C_in / groups, kH, kW].
  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }  ///< undefined without a conv bias
  /// The batch norm child "bn".
  const std::shared_ptr<nn::BatchNorm2d>& bn() const { return bn_; }
  /// "_input_quantizer" (null: float input).
  const std::shared_ptr<nn::UnaryModule>& input_quantizer() const { return input_quantizer_; }
  /// "_weight_quantizer" (null: float weight).
  const std::shared_ptr<nn::UnaryModule>& weight_quantizer() const { return weight_quantizer_; }

 protected:
  /// Keeps the handles in step when "bn" (a fusable BatchNorm2d, else ValueError) or a quantizer
  /// child is replaced.
  void on_replace_child(const std::string& name, const std::shared_ptr<Module>& module) override;

 private:
  nn::Conv2dOptions options_;
  std::string repr_;
  Tensor weight_, bias_;
  std::shared_ptr<nn::BatchNorm2d> bn_;
  std::shared_ptr<nn::UnaryModule> input_quantizer_, weight_quantizer_;
  bool bn_frozen_ = false;
};

/// Why a Conv2d with `out_channels` output channels and `bn` cannot be fused, or "" when they can
/// (bn must be affine, track running statistics and have out_channels features).
std::string conv_bn_mismatch(std::int64_t out_channels, const nn::BatchNormBase& bn);

/// torch.ao.nn.intrinsic.qat.freeze_bn_stats / update_bn_stats over a whole model: calls the
/// method of every QuantConvBn2d in `model` (itself included) and returns how many there were.
std::size_t freeze_bn_stats(nn::Module& model);
std::size_t update_bn_stats(nn::Module& model);  ///< the same with update_bn_stats

}  // namespace qgrad::quant
