/// @file
/// InvertedResidual: MobileNetV2's block (Sandler et al. 2018), with torchvision's structure and
/// names, the residual sum done by an nn::Add module so that it can be observed and quantized:
///
///   x -> conv: [0: 1x1 expand conv - BN - ReLU6, when expand_ratio != 1]
///              depthwise 3x3 conv (groups = hidden channels, stride) - BN - ReLU6
///              1x1 projection conv - BN (linear bottleneck: no activation)
///     -> add(conv(x), x), only when stride == 1 and in_channels == out_channels
///
/// Children: conv (a Sequential; the conv-BN-ReLU6 parts are Sequentials "0" conv, "1" BN,
/// "2" ReLU6 like torchvision's Conv2dNormActivation), then add when the block is residual; the
/// state_dict keys equal torchvision's ("conv.0.0.weight", "conv.1.0.weight", "conv.2.weight",
/// ...). torchvision computes x + conv(x); the sum is the same, taken here as add(conv(x), x) so
/// that the shortcut is the add's second input, as in BasicBlock. Convolutions have no bias.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/generator.h"
#include "nn/modules/add.h"
#include "nn/modules/sequential.h"
#include "nn/unary_module.h"

namespace qgrad::nn {

/// Conv (no bias, padding (kernel - 1) / 2) - BatchNorm2d - ReLU6 as a Sequential "0", "1", "2":
/// torchvision's Conv2dNormActivation with ReLU6 (MobileNetV2's ConvBNReLU).
std::shared_ptr<Sequential> conv_bn_relu6(std::int64_t in_channels, std::int64_t out_channels,
                                          std::int64_t kernel, std::int64_t stride,
                                          std::int64_t groups, Generator& gen);

/// MobileNetV2's inverted residual block (see the file comment).
class InvertedResidual : public UnaryModule {
 public:
  /// hidden channels = round(in_channels * expand_ratio) (half to even, as Python's round);
  /// stride 1 or 2 and expand_ratio > 0, else ValueError. Weights are drawn from `gen` in
  /// forward order.
  InvertedResidual(std::int64_t in_channels, std::int64_t out_channels, std::int64_t stride,
                   double expand_ratio, Generator& gen);
  Tensor forward(const Tensor& input) override;

  /// The block's layers (a Sequential; a swapped one is any UnaryModule).
  std::shared_ptr<UnaryModule> conv() const { return conv_; }
  /// The residual sum; null when the block has no shortcut.
  std::shared_ptr<Add> add() const { return add_; }
  /// Whether the input is added to the output (stride 1 and equal channel counts).
  bool use_res_connect() const { return add_ != nullptr; }
  /// The channels of the depthwise convolution.
  std::int64_t hidden_channels() const { return hidden_; }

 protected:
  /// Keeps the handles forward uses in step when a child is swapped: "conv" must be replaced by
  /// a UnaryModule and "add" by an Add, else ValueError.
  void on_replace_child(const std::string& name, const std::shared_ptr<Module>& module) override;

 private:
  std::int64_t hidden_ = 0;
  std::shared_ptr<UnaryModule> conv_;
  std::shared_ptr<Add> add_;
};

}  // namespace qgrad::nn
