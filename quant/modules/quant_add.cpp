// QuantAdd: quantized inputs of a residual addition.
#include "quant/modules/quant_add.h"

#include "ops/binary/binary.h"
#include "quant/modules/default_quantizers.h"

namespace qgrad::quant {

QuantAdd::QuantAdd() : QuantAdd(default_input_quantizer(), default_input_quantizer()) {}

QuantAdd::QuantAdd(std::shared_ptr<nn::UnaryModule> input0_quantizer,
                   std::shared_ptr<nn::UnaryModule> input1_quantizer)
    : nn::Add("QuantAdd") {
  if (input0_quantizer) q0_ = register_module("_input0_quantizer", input0_quantizer);
  if (input1_quantizer) q1_ = register_module("_input1_quantizer", input1_quantizer);
}

Tensor QuantAdd::forward(const Tensor& a, const Tensor& b) {
  return add(q0_ ? q0_->forward(a) : a, q1_ ? q1_->forward(b) : b);
}

void QuantAdd::on_replace_child(const std::string& name, const std::shared_ptr<Module>& module) {
  auto unary = std::dynamic_pointer_cast<nn::UnaryModule>(module);
  QGRAD_CHECK(unary != nullptr, ValueError, "QuantAdd::replace_module: replacement for '", name,
              "' (", module->name(), ") does not derive from UnaryModule");
  if (name == "_input0_quantizer") q0_ = unary;
  if (name == "_input1_quantizer") q1_ = unary;
}

}  // namespace qgrad::quant
