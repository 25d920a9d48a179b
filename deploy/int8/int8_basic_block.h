// Int8BasicBlock: a ResNet BasicBlock in int8, relu2(add(bn2(conv2(relu1(bn1(conv1(x))))),
// shortcut(x))) with the batch norms folded and the ReLUs fused: conv1 writes conv2's input grid,
// conv2 writes the grid of the QuantAdd's input 0, the shortcut (x itself, or the int8
// downsample convolution) is on the grid of its input 1, and the Int8Add writes the grid of
// whatever quantizes the block's output next (or float32); or, fused, conv2 adds the shortcut
// with oneDNN's sum post-op and writes that grid itself. The block input x must be on conv1's
// input grid, which the converter checks equals the shortcut's (both quantizers observe x).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "deploy/int8/int8_add.h"
#include "deploy/int8/int8_conv2d.h"
#include "deploy/int8/int8_layer.h"

namespace qgrad::quant {

class Int8BasicBlock : public Int8Layer {
 public:
  // downsample may be null (identity shortcut); add is null when conv2 sums the residual itself
  // (convert()'s fuse_residual_sum).
  Int8BasicBlock(std::string name, std::unique_ptr<Int8Conv2d> conv1,
                 std::unique_ptr<Int8Conv2d> conv2, std::unique_ptr<Int8Conv2d> downsample,
                 std::unique_ptr<Int8Add> add);
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;
  // The sub-layers', in forward order.
  std::vector<std::pair<std::string, std::string>> implementations() const override;

 private:
  std::string name_;
  std::unique_ptr<Int8Conv2d> conv1_, conv2_, downsample_;
  std::unique_ptr<Int8Add> add_;
};

}  // namespace qgrad::quant
