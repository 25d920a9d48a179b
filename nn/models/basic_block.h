/// @file
/// BasicBlock: the two-convolution residual block of ResNet (He et al. 2016), as torchvision's
/// BasicBlock but with a separate ReLU module for each use and the residual sum done by an
/// nn::Add module, so that every activation and the add can be observed and quantized:
///
///   x -> conv1(3x3, stride) -> bn1 -> relu1 -> conv2(3x3) -> bn2 --+-> add -> relu2
///   x -> [downsample: conv 1x1 stride + bn, when stride != 1 or channels change] --+
///
/// Children, in registration order (hence state_dict order): conv1, bn1, relu1, conv2, bn2,
/// [downsample (a Sequential "0" conv, "1" bn)], add, relu2. Convolutions have no bias.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/generator.h"
#include "nn/modules/add.h"
#include "nn/unary_module.h"

namespace qgrad::nn {

/// ResNet's basic residual block: conv-bn-relu-conv-bn, plus the shortcut (identity or
/// `downsample`), then relu.
class BasicBlock : public UnaryModule {
 public:
  /// Weights are drawn from `gen` in registration order.
  BasicBlock(std::int64_t in_channels, std::int64_t out_channels, std::int64_t stride,
             Generator& gen);
  Tensor forward(const Tensor& input) override;

  /// The children as the interfaces forward uses (dynamic_pointer_cast to Conv2d etc. for more).
  /// downsample is null for an identity shortcut.
  std::shared_ptr<UnaryModule> conv1() const { return conv1_; }
  /// The first batch norm.
  std::shared_ptr<UnaryModule> bn1() const { return bn1_; }
  /// The first ReLU.
  std::shared_ptr<UnaryModule> relu1() const { return relu1_; }
  /// The second convolution.
  std::shared_ptr<UnaryModule> conv2() const { return conv2_; }
  /// The second batch norm.
  std::shared_ptr<UnaryModule> bn2() const { return bn2_; }
  /// The shortcut's projection; null for an identity shortcut.
  std::shared_ptr<UnaryModule> downsample() const { return downsample_; }
  /// The module that adds the shortcut to the residual.
  std::shared_ptr<Add> add() const { return add_; }
  /// The ReLU after the addition.
  std::shared_ptr<UnaryModule> relu2() const { return relu2_; }

 protected:
  /// Keeps the handles forward uses in step when a child is swapped (e.g. for a quantized or
  /// fused version): unary children must be replaced by UnaryModules and "add" by an Add, else
  /// ValueError.
  void on_replace_child(const std::string& name, const std::shared_ptr<Module>& module) override;

 private:
  std::shared_ptr<UnaryModule> conv1_, bn1_, relu1_, conv2_, bn2_, downsample_;
  std::shared_ptr<Add> add_;
  std::shared_ptr<UnaryModule> relu2_;
};

}  // namespace qgrad::nn
