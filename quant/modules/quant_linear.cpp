// QuantLinear: quantized operands around ops/matmul linear.
#include "quant/modules/quant_linear.h"

#include "nn/repr_format.h"
#include "ops/matmul/matmul.h"
#include "quant/modules/default_quantizers.h"
#include "quant/modules/int32_bias.h"

namespace qgrad::quant {

QuantLinear::QuantLinear(const nn::Linear& linear, std::shared_ptr<nn::UnaryModule> input_quantizer,
                         std::shared_ptr<nn::UnaryModule> weight_quantizer)
    : nn::UnaryModule("QuantLinear"), options_(linear.options()) {
  // The float layer's own tensors: registering the same handles shares them.
  weight_ = register_parameter("weight", linear.weight(), linear.weight().requires_grad());
  bias_ = register_parameter("bias", linear.bias(),
                             linear.bias().defined() && linear.bias().requires_grad());
  if (input_quantizer) input_quantizer_ = register_module("_input_quantizer", input_quantizer);
  if (weight_quantizer) weight_quantizer_ = register_module("_weight_quantizer", weight_quantizer);
}

QuantLinear::QuantLinear(const nn::LinearOptions& options, Generator& gen)
    : QuantLinear(nn::Linear(options, gen), default_input_quantizer(),
                  default_weight_quantizer({options.out_features_, options.in_features_})) {}

QuantLinear::QuantLinear(const nn::LinearOptions& options, Generator& gen,
                         std::shared_ptr<nn::UnaryModule> input_quantizer,
                         std::shared_ptr<nn::UnaryModule> weight_quantizer)
    : QuantLinear(nn::Linear(options, gen), std::move(input_quantizer),
                  std::move(weight_quantizer)) {}

std::shared_ptr<QuantLinear> QuantLinear::from_float(const nn::Linear& linear) {
  return from_float(linear, default_input_quantizer(),
                    default_weight_quantizer(linear.weight().shape()));
}

std::shared_ptr<QuantLinear> QuantLinear::from_float(
    const nn::Linear& linear, std::shared_ptr<nn::UnaryModule> input_quantizer,
    std::shared_ptr<nn::UnaryModule> weight_quantizer) {
  auto q = std::make_shared<QuantLinear>(linear, std::move(input_quantizer),
                                         std::move(weight_quantizer));
  q->train(linear.is_training());
  return q;
}

Tensor QuantLinear::forward(const Tensor& x) {
  QGRAD_CHECK(
      x.defined() && x.dim() >= 1 && x.size(-1) == options_.in_features_, ShapeError,
      "QuantLinear: expected an input whose last dim is in_features=", options_.in_features_,
      ", got shape ", x.defined() ? shape_str(x.shape()) : std::string("(undefined)"));
  const Tensor xq = input_quantizer_ ? input_quantizer_->forward(x) : x;
  const Tensor wq = weight_quantizer_ ? weight_quantizer_->forward(weight_) : weight_;
  // The bias after the quantizers ran: an int32 bias uses this step's scales.
  return linear(xq, wq, layer_bias(*this, "QuantLinear"));
}

std::string QuantLinear::extra_repr() const {
  return "in_features=" + std::to_string(options_.in_features_) +
         ", out_features=" + std::to_string(options_.out_features_) +
         ", bias=" + nn::py_bool(bias_.defined()) + (int32_bias_ ? ", int32_bias=True" : "");
}

void QuantLinear::on_replace_child(const std::string& name, const std::shared_ptr<Module>& module) {
  auto unary = std::dynamic_pointer_cast<nn::UnaryModule>(module);
  QGRAD_CHECK(unary != nullptr, ValueError, "QuantLinear::replace_module: replacement for '", name,
              "' (", module->name(), ") does not derive from UnaryModule");
  if (name == "_input_quantizer") input_quantizer_ = unary;
  if (name == "_weight_quantizer") weight_quantizer_ = unary;
}

}  // namespace qgrad::quant
