// BasicBlock: construction of the residual block's layers and its forward pass.
#include "nn/models/basic_block.h"

#include "nn/modules/activation.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"
#include "nn/modules/sequential.h"

namespace qgrad::nn {

BasicBlock::BasicBlock(std::int64_t in_channels, std::int64_t out_channels, std::int64_t stride,
                       Generator& gen)
    : UnaryModule("BasicBlock") {
  QGRAD_CHECK(stride >= 1, ValueError, "BasicBlock: stride must be >= 1, got ", stride);
  conv1_ = register_module(
      "conv1",
      std::make_shared<Conv2d>(
          Conv2dOptions(in_channels, out_channels, 3).stride(stride).padding(1).bias(false), gen));
  bn1_ = register_module("bn1", std::make_shared<BatchNorm2d>(out_channels));
  relu1_ = register_module("relu1", std::make_shared<ReLU>());
  conv2_ = register_module(
      "conv2", std::make_shared<Conv2d>(
                   Conv2dOptions(out_channels, out_channels, 3).padding(1).bias(false), gen));
  bn2_ = register_module("bn2", std::make_shared<BatchNorm2d>(out_channels));
  if (stride != 1 || in_channels != out_channels) {
    // Projection shortcut (option B of He et al.): 1x1 convolution with the block's stride.
    auto ds = std::make_shared<Sequential>();
    ds->push_back(std::make_shared<Conv2d>(
        Conv2dOptions(in_channels, out_channels, 1).stride(stride).bias(false), gen));
    ds->push_back(std::make_shared<BatchNorm2d>(out_channels));
    downsample_ = register_module("downsample", ds);
  }
  add_ = register_module("add", std::make_shared<Add>());
  relu2_ = register_module("relu2", std::make_shared<ReLU>());
}

Tensor BasicBlock::forward(const Tensor& input) {
  Tensor out = relu1_->forward(bn1_->forward(conv1_->forward(input)));
  out = bn2_->forward(conv2_->forward(out));
  const Tensor shortcut = downsample_ ? downsample_->forward(input) : input;
  return relu2_->forward(add_->forward(out, shortcut));
}

void BasicBlock::on_replace_child(const std::string& name, const std::shared_ptr<Module>& module) {
  if (name == "add") {
    auto add = std::dynamic_pointer_cast<Add>(module);
    QGRAD_CHECK(add != nullptr, ValueError, "BasicBlock::replace_module: replacement for 'add' (",
                module->name(), ") does not derive from Add");
    add_ = add;
    return;
  }
  auto unary = std::dynamic_pointer_cast<UnaryModule>(module);
  QGRAD_CHECK(unary != nullptr, ValueError, "BasicBlock::replace_module: replacement for '", name,
              "' (", module->name(), ") does not derive from UnaryModule");
  if (name == "conv1") conv1_ = unary;
  if (name == "bn1") bn1_ = unary;
  if (name == "relu1") relu1_ = unary;
  if (name == "conv2") conv2_ = unary;
  if (name == "bn2") bn2_ = unary;
  if (name == "downsample") downsample_ = unary;
  if (name == "relu2") relu2_ = unary;
}

}  // namespace qgrad::nn
