// FloatResidualBlock: a residual block for float inference, ResNet's BasicBlock or MobileNetV2's
// InvertedResidual with its shortcut: a chain of FloatConv2d (batch norms folded, ReLU / ReLU6
// fused), the last of which adds the shortcut with oneDNN's sum post-op (and applies the block's
// final ReLU, if any), so the add costs no pass of its own. The shortcut is the block input
// itself, or a projection convolution (BasicBlock's downsample, batch norm folded) run on it.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "deploy/float_inference/float_conv2d.h"
#include "deploy/float_inference/float_layer.h"

namespace qgrad::deploy {

class FloatResidualBlock : public FloatLayer {
 public:
  // `convs` in forward order, the last with spec().residual; `shortcut` may be null (identity).
  FloatResidualBlock(std::string name, std::vector<std::unique_ptr<FloatConv2d>> convs,
                     std::unique_ptr<FloatConv2d> shortcut);
  FloatActivation forward(const FloatActivation& x) override;
  std::string describe() const override;
  // The convolutions', in forward order (the shortcut's last).
  std::vector<std::pair<std::string, std::string>> implementations() const override;

 private:
  std::string name_;
  std::vector<std::unique_ptr<FloatConv2d>> convs_;
  std::unique_ptr<FloatConv2d> shortcut_;
};

}  // namespace qgrad::deploy
