/// @file
/// QuantConv2d: a 2-D convolution with quantized input and weight, as pytorch_quantization's
/// quant_nn.QuantConv2d: y = conv2d(input_quantizer(x), weight_quantizer(W), b, stride, padding,
/// dilation, groups). Quantizers are any UnaryModules, registered as "_input_quantizer" and
/// "_weight_quantizer" (null = that operand stays float); without quantizers given, the NVIDIA
/// defaults: 8-bit per-tensor input, 8-bit per-output-channel (axis 0) weight with amax sized
/// [out_channels, 1, 1, 1].
///
/// from_float() converts a trained nn::Conv2d, sharing its weight and bias tensors.
/// State dict: "weight", "bias" (when present), then the quantizers' entries.
/// set_int32_bias(true) fake quantizes the bias onto the int32 grid of scale s_in * s_w whenever
/// both quantizers are active (int32_bias.h: what integer runtimes add); off by default, as
/// pytorch_quantization's and torch.ao's layers keep a float bias. A recipe setting, not state.
#pragma once

#include <memory>
#include <string>

#include "core/generator.h"
#include "nn/modules/conv.h"
#include "nn/unary_module.h"

namespace qgrad::quant {

/// pytorch_quantization's QuantConv2d: a 2-D convolution with quantized input and weight (see
/// the file comment).
class QuantConv2d : public nn::UnaryModule {
 public:
  /// Fresh weights drawn from gen exactly as nn::Conv2d (options validated the same way).
  QuantConv2d(const nn::Conv2dOptions& options, Generator& gen);
  /// Fresh weights drawn from gen as nn::Conv2d, with the given quantizers (null: that operand
  /// stays float).
  QuantConv2d(const nn::Conv2dOptions& options, Generator& gen,
              std::shared_ptr<nn::UnaryModule> input_quantizer,
              std::shared_ptr<nn::UnaryModule> weight_quantizer);
  /// Shares conv's weight and bias (see from_float).
  QuantConv2d(const nn::Conv2d& conv, std::shared_ptr<nn::UnaryModule> input_quantizer,
              std::shared_ptr<nn::UnaryModule> weight_quantizer);

  /// conv with the NVIDIA default quantizers, sharing its weight and bias.
  static std::shared_ptr<QuantConv2d> from_float(const nn::Conv2d& conv);
  /// conv with the given quantizers, sharing its weight and bias (see the file comment).
  static std::shared_ptr<QuantConv2d> from_float(const nn::Conv2d& conv,
                                                 std::shared_ptr<nn::UnaryModule> input_quantizer,
                                                 std::shared_ptr<nn::UnaryModule> weight_quantizer);

  /// x [N, C_in, H, W] (or unbatched [C_in, H, W]); the input quantizer sees the batched form.
  Tensor forward(const Tensor& input) override;
  /// nn::Conv2d's: "3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False"
  std::string extra_repr() const override;

  const nn::Conv2dOptions& options() const { return options_; }  ///< spatial values as {h, w}
  /// The weight [C_out, C_in / groups, kH, kW].
  const Tensor& weight() const { return weight_; }
  /// The bias [C_out]; undefined without one.
  const Tensor& bias() const { return bias_; }
  /// fake-quantize the bias to int32 (see the file comment).
  void set_int32_bias(bool on) { int32_bias_ = on; }
  /// Whether the bias is fake-quantized to int32.
  bool int32_bias() const { return int32_bias_; }
  /// "_input_quantizer" (null: float input).
  const std::shared_ptr<nn::UnaryModule>& input_quantizer() const { return input_quantizer_; }
  /// "_weight_quantizer" (null: float weight).
  const std::shared_ptr<nn::UnaryModule>& weight_quantizer() const { return weight_quantizer_; }

 protected:
  /// Keeps the quantizer handles in step when "_input_quantizer" / "_weight_quantizer" are
  /// replaced (they must stay UnaryModules).
  void on_replace_child(const std::string& name, const std::shared_ptr<Module>& module) override;

 private:
  nn::Conv2dOptions options_;
  std::string repr_;
  Tensor weight_, bias_;
  std::shared_ptr<nn::UnaryModule> input_quantizer_, weight_quantizer_;
  bool int32_bias_ = false;
};

}  // namespace qgrad::quant
