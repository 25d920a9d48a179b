// InvertedResidual: construction of MobileNetV2's block and its forward pass.
#include "nn/models/inverted_residual.h"

#include <cmath>

#include "core/error.h"
#include "nn/modules/activation.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"

namespace qgrad::nn {

std::shared_ptr<Sequential> conv_bn_relu6(std::int64_t in_channels, std::int64_t out_channels,
                                          std::int64_t kernel, std::int64_t stride,
                                          std::int64_t groups, Generator& gen) {
  auto seq = std::make_shared<Sequential>();
  seq->push_back(std::make_shared<Conv2d>(Conv2dOptions(in_channels, out_channels, kernel)
                                              .stride(stride)
                                              .padding((kernel - 1) / 2)
                                              .groups(groups)
                                              .bias(false),
                                          gen));
  seq->push_back(std::make_shared<BatchNorm2d>(out_channels));
  seq->push_back(std::make_shared<ReLU6>());
  return seq;
}

InvertedResidual::InvertedResidual(std::int64_t in_channels, std::int64_t out_channels,
                                   std::int64_t stride, double expand_ratio, Generator& gen)
    : UnaryModule("InvertedResidual") {
  QGRAD_CHECK(stride == 1 || stride == 2, ValueError,
              "InvertedResidual: stride must be 1 or 2, got ", stride);
  QGRAD_CHECK(expand_ratio > 0, ValueError, "InvertedResidual: expand_ratio must be positive, got ",
              expand_ratio);
  hidden_ =
      static_cast<std::int64_t>(std::nearbyint(static_cast<double>(in_channels) * expand_ratio));
  QGRAD_CHECK(hidden_ > 0, ValueError, "InvertedResidual: ", in_channels, " x ", expand_ratio,
              " rounds to no hidden channels");
  auto conv = std::make_shared<Sequential>();
  if (expand_ratio != 1.0) conv->push_back(conv_bn_relu6(in_channels, hidden_, 1, 1, 1, gen));
  conv->push_back(conv_bn_relu6(hidden_, hidden_, 3, stride, hidden_, gen));  // depthwise
  conv->push_back(
      std::make_shared<Conv2d>(Conv2dOptions(hidden_, out_channels, 1).bias(false), gen));
  conv->push_back(std::make_shared<BatchNorm2d>(out_channels));
  conv_ = register_module("conv", conv);
  if (stride == 1 && in_channels == out_channels)
    add_ = register_module("add", std::make_shared<Add>());
}

Tensor InvertedResidual::forward(const Tensor& input) {
  Tensor out = conv_->forward(input);
  return add_ ? add_->forward(out, input) : out;
}

void InvertedResidual::on_replace_child(const std::string& name,
                                        const std::shared_ptr<Module>& module) {
  if (name == "add") {
    auto add = std::dynamic_pointer_cast<Add>(module);
    QGRAD_CHECK(add != nullptr, ValueError,
                "InvertedResidual::replace_module: replacement for 'add' (", module->name(),
                ") does not derive from Add");
    add_ = add;
    return;
  }
  auto unary = std::dynamic_pointer_cast<UnaryModule>(module);
  QGRAD_CHECK(unary != nullptr, ValueError, "InvertedResidual::replace_module: replacement for '",
              name, "' (", module->name(), ") does not derive from UnaryModule");
  if (name == "conv") conv_ = unary;
}

}  // namespace qgrad::nn
