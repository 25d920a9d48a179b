// Int8Model: the integer model quant::convert() builds, a chain of Int8Layers. forward() takes
// the float32 input the QAT model takes ([N, C, H, W], normalised), quantizes it with the first
// layer's input grid, runs the int8 layers and returns the float32 output (the logits, where the
// model leaves the quantized domain), contiguous. implementations() lists every layer with the
// oneDNN implementation that ran it in the last forward. Not thread-safe: one forward at a time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "deploy/int8/int8_layer.h"

namespace qgrad::quant {

struct Int8LayerInfo {
  std::string layer;  // Int8Layer::describe()
  std::string impl;   // Int8Layer::impl_info(); empty before the first forward
};

class Int8Model {
 public:
  void append(std::unique_ptr<Int8Layer> layer);
  Tensor forward(const Tensor& x);
  std::vector<Int8LayerInfo> implementations() const;
  const std::vector<std::unique_ptr<Int8Layer>>& layers() const { return layers_; }

 private:
  std::vector<std::unique_ptr<Int8Layer>> layers_;
};

}  // namespace qgrad::quant
