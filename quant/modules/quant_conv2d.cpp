// QuantConv2d: quantized operands around ops/conv conv2d.
#include "quant/modules/quant_conv2d.h"

#include "ops/conv/conv.h"
#include "quant/modules/default_quantizers.h"
#include "quant/modules/int32_bias.h"

namespace qgrad::quant {

QuantConv2d::QuantConv2d(const nn::Conv2d& conv, std::shared_ptr<nn::UnaryModule> input_quantizer,
                         std::shared_ptr<nn::UnaryModule> weight_quantizer)
    : nn::UnaryModule("QuantConv2d"), options_(conv.options()), repr_(conv.extra_repr()) {
  weight_ = register_parameter("weight", conv.weight(), conv.weight().requires_grad());
  bias_ =
      register_parameter("bias", conv.bias(), conv.bias().defined() && conv.bias().requires_grad());
  if (input_quantizer) input_quantizer_ = register_module("_input_quantizer", input_quantizer);
  if (weight_quantizer) weight_quantizer_ = register_module("_weight_quantizer", weight_quantizer);
}

QuantConv2d::QuantConv2d(const nn::Conv2dOptions& options, Generator& gen)
    : QuantConv2d(nn::Conv2d(options, gen), default_input_quantizer(), nullptr) {
  weight_quantizer_ =
      register_module("_weight_quantizer", default_weight_quantizer(weight_.shape()));
}

QuantConv2d::QuantConv2d(const nn::Conv2dOptions& options, Generator& gen,
                         std::shared_ptr<nn::UnaryModule> input_quantizer,
                         std::shared_ptr<nn::UnaryModule> weight_quantizer)
    : QuantConv2d(nn::Conv2d(options, gen), std::move(input_quantizer),
                  std::move(weight_quantizer)) {}

std::shared_ptr<QuantConv2d> QuantConv2d::from_float(const nn::Conv2d& conv) {
  return from_float(conv, default_input_quantizer(),
                    default_weight_quantizer(conv.weight().shape()));
}

std::shared_ptr<QuantConv2d> QuantConv2d::from_float(
    const nn::Conv2d& conv, std::shared_ptr<nn::UnaryModule> input_quantizer,
    std::shared_ptr<nn::UnaryModule> weight_quantizer) {
  auto q =
      std::make_shared<QuantConv2d>(conv, std::move(input_quantizer), std::move(weight_quantizer));
  q->train(conv.is_training());
  return q;
}

Tensor QuantConv2d::forward(const Tensor& input) {
  QGRAD_CHECK(input.defined() && (input.dim() == 3 || input.dim() == 4), ShapeError,
              "QuantConv2d: expected a 3-D (unbatched) or 4-D (batched) input, got shape ",
              input.defined() ? shape_str(input.shape()) : std::string("(undefined)"));
  QGRAD_CHECK(input.size(input.dim() - 3) == options_.in_channels_, ShapeError,
              "QuantConv2d: expected input with ", options_.in_channels_,
              " channels (in_channels), got shape ", shape_str(input.shape()));
  const bool batched = input.dim() == 4;
  const Tensor x = batched ? input : input.unsqueeze(0);
  const Tensor xq = input_quantizer_ ? input_quantizer_->forward(x) : x;
  const Tensor wq = weight_quantizer_ ? weight_quantizer_->forward(weight_) : weight_;
  // The bias after the quantizers ran: an int32 bias uses this step's scales.
  const Tensor y = conv2d(xq, wq, layer_bias(*this, "QuantConv2d"), options_.stride_,
                          options_.padding_, options_.dilation_, options_.groups_);
  return batched ? y : y.squeeze(0);
}

std::string QuantConv2d::extra_repr() const {
  return int32_bias_ ? repr_ + ", int32_bias=True" : repr_;
}

void QuantConv2d::on_replace_child(const std::string& name, const std::shared_ptr<Module>& module) {
  auto unary = std::dynamic_pointer_cast<nn::UnaryModule>(module);
  QGRAD_CHECK(unary != nullptr, ValueError, "QuantConv2d::replace_module: replacement for '", name,
              "' (", module->name(), ") does not derive from UnaryModule");
  if (name == "_input_quantizer") input_quantizer_ = unary;
  if (name == "_weight_quantizer") weight_quantizer_ = unary;
}

}  // namespace qgrad::quant
