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

class QuantAdd : public nn::Add {
 public:
  QuantAdd();
  QuantAdd(std::shared_ptr<nn::UnaryModule> input0_quantizer,
           std::shared_ptr<nn::UnaryModule> input1_quantizer);

  /// q0(a) + q1(b) with broadcasting.
  Tensor forward(const Tensor& a, const Tensor& b) override;

  const std::shared_ptr<nn::UnaryModule>& input0_quantizer() const { return q0_; }
  const std::shared_ptr<nn::UnaryModule>& input1_quantizer() const { return q1_; }

 protected:
  void on_replace_child(const std::string& name, const std::shared_ptr<Module>& module) override;

 private:
  std::shared_ptr<nn::UnaryModule> q0_, q1_;
};

}  // namespace qgrad::quant
