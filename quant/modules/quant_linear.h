/// @file
/// QuantLinear: a fully connected layer with quantized input and weight, as pytorch_quantization's
/// quant_nn.QuantLinear: y = linear(input_quantizer(x), weight_quantizer(W), b). The quantizers
/// are any UnaryModules (TensorQuantizer, FakeQuantize, LearnableFakeQuantize,
/// HorizonFakeQuantize, AimetQuantizeDequantize, ...), registered as the children
/// "_input_quantizer" and "_weight_quantizer"; a null quantizer leaves that operand in float.
/// Without quantizers given, the NVIDIA defaults are used: 8-bit per-tensor input and 8-bit
/// per-row (axis 0) weight TensorQuantizers, the weight amax sized [out_features, 1].
///
/// from_float() converts a trained nn::Linear: the QuantLinear shares its weight and bias tensors
/// (the same TensorImpls, so values, gradients and optimiser state carry over).
/// State dict: "weight", "bias" (when present), then the quantizers' entries.
/// set_int32_bias(true) fake quantizes the bias onto the int32 grid of scale s_in * s_w whenever
/// both quantizers are active (int32_bias.h: what integer runtimes add); off by default, as
/// pytorch_quantization's and torch.ao's layers keep a float bias. A recipe setting, not state.
#pragma once

#include <memory>
#include <string>

#include "core/generator.h"
#include "nn/modules/linear.h"
#include "nn/unary_module.h"

namespace qgrad::quant {

/// pytorch_quantization's QuantLinear: a fully connected layer with quantized input and weight
/// (see the file comment).
class QuantLinear : public nn::UnaryModule {
 public:
  /// Fresh weights drawn from gen exactly as nn::Linear; NVIDIA default quantizers.
  QuantLinear(const nn::LinearOptions& options, Generator& gen);
  /// Fresh weights drawn from gen as nn::Linear, with the given quantizers (null: that operand
  /// stays float).
  QuantLinear(const nn::LinearOptions& options, Generator& gen,
              std::shared_ptr<nn::UnaryModule> input_quantizer,
              std::shared_ptr<nn::UnaryModule> weight_quantizer);

  /// Shares linear's weight and bias (see from_float).
  QuantLinear(const nn::Linear& linear, std::shared_ptr<nn::UnaryModule> input_quantizer,
              std::shared_ptr<nn::UnaryModule> weight_quantizer);

  /// linear with the NVIDIA default quantizers, sharing its weight and bias.
  static std::shared_ptr<QuantLinear> from_float(const nn::Linear& linear);
  /// linear with the given quantizers, sharing its weight and bias (see the file comment).
  static std::shared_ptr<QuantLinear> from_float(const nn::Linear& linear,
                                                 std::shared_ptr<nn::UnaryModule> input_quantizer,
                                                 std::shared_ptr<nn::UnaryModule> weight_quantizer);

  /// linear(input_quantizer(x), weight_quantizer(W), b) for x [..., in_features].
  Tensor forward(const Tensor& x) override;
  /// "in_features=4, out_features=3, bias=True"
  std::string extra_repr() const override;

  /// in_features, out_features, bias.
  const nn::LinearOptions& options() const { return options_; }
  /// The weight [out_features, in_features].
  const Tensor& weight() const { return weight_; }
  /// The bias [out_features]; undefined without one.
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
  nn::LinearOptions options_;
  Tensor weight_, bias_;
  std::shared_ptr<nn::UnaryModule> input_quantizer_, weight_quantizer_;
  bool int32_bias_ = false;
};

}  // namespace qgrad::quant
