/// @file
/// QuantAdd: a residual addition with quantized inputs, y = q0(a) + q1(b), so that TensorRT sees
/// Q/DQ on both inputs of the add (without them it falls back to higher precision). Derives from
/// nn::Add so it can replace the "add" child of a residual block (nn::BasicBlock keeps its handle
/// in step); forward overrides nn::Add::forward (virtual). The quantizers are any UnaryModules,
/// registered as "_input0_quantizer" and "_input1_quantizer" (null = that input stays float);
/// without quantizers given, two NVIDIA 8-bit per-tensor TensorQuantizers. Prints as "QuantAdd",
/// the name of pytorch_quantization's quant_nn.QuantAdd.
#pragma once

#include <memory>
#include <string>

#include "nn/modules/add.h"
#include "nn/unary_module.h"

namespace qgrad::quant {

/// pytorch_quantization's QuantAdd: an Add whose two inputs each pass a quantizer first.
class QuantAdd : public nn::Add {
 public:
  QuantAdd();
  /// The given quantizers (QuantAdd() uses two default input quantizers).
  QuantAdd(std::shared_ptr<nn::UnaryModule> input0_quantizer,
           std::shared_ptr<nn::UnaryModule> input1_quantizer);

  /// q0(a) + q1(b) with broadcasting.
  Tensor forward(const Tensor& a, const Tensor& b) override;

  /// The quantizer of the first input ("_input0_quantizer").
  const std::shared_ptr<nn::UnaryModule>& input0_quantizer() const { return q0_; }
  /// The quantizer of the second input ("_input1_quantizer").
  const std::shared_ptr<nn::UnaryModule>& input1_quantizer() const { return q1_; }

 protected:
  /// Keeps the quantizer handles in step when a quantizer child is replaced (ValueError unless
  /// the replacement is a UnaryModule).
  void on_replace_child(const std::string& name, const std::shared_ptr<Module>& module) override;

 private:
  std::shared_ptr<nn::UnaryModule> q0_, q1_;
};

}  // namespace qgrad::quant
