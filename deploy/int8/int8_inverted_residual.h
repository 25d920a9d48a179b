// Int8InvertedResidual: a MobileNetV2 InvertedResidual with its shortcut in int8,
// add(conv(x), x): the block's convolutions in order (batch norms folded, ReLU6 fused), each
// writing the next one's input grid and the last the grid of the QuantAdd's input 0; x is on the
// add's input 1 grid, which the converter checks equals the first convolution's input grid (both
// quantizers observe x), and the Int8Add writes the grid of whatever quantizes the block's output
// next (or float32). Blocks without a shortcut need no layer of their own: the converter walks
// their convolutions as a Sequential's.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "deploy/int8/int8_add.h"
#include "deploy/int8/int8_conv2d.h"
#include "deploy/int8/int8_layer.h"

namespace qgrad::quant {

class Int8InvertedResidual : public Int8Layer {
 public:
  // At least one convolution, and the add.
  Int8InvertedResidual(std::string name, std::vector<std::unique_ptr<Int8Conv2d>> convs,
                       std::unique_ptr<Int8Add> add);
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;
  // The sub-layers', in forward order.
  std::vector<std::pair<std::string, std::string>> implementations() const override;

 private:
  std::string name_;
  std::vector<std::unique_ptr<Int8Conv2d>> convs_;
  std::unique_ptr<Int8Add> add_;
};

}  // namespace qgrad::quant
