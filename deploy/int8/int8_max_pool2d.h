// Int8MaxPool2d: 2-D max pooling on uint8 / int8 activations with oneDNN's pooling (any dtype,
// the grid unchanged: the maximum of grid values is the grid value of the maximum, since
// quantization is monotonic, so pooling after requantisation equals the model's float pooling
// followed by its next quantizer). Kernel, stride, padding, dilation and ceil_mode as
// nn::MaxPool2d; padded positions never win. Output in NHWC.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "deploy/int8/int8_layer.h"

namespace qgrad::quant {

struct Int8MaxPool2dSpec {
  std::string name;
  std::array<std::int64_t, 2> kernel{2, 2}, stride{2, 2}, padding{0, 0}, dilation{1, 1};
  bool ceil_mode = false;
};

class Int8MaxPool2d : public Int8Layer {
 public:
  explicit Int8MaxPool2d(Int8MaxPool2dSpec spec);
  ~Int8MaxPool2d() override;
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;

 private:
  struct Impl;
  Int8MaxPool2dSpec spec_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace qgrad::quant
