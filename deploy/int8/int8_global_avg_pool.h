// Int8GlobalAvgPool: AdaptiveAvgPool2d(1) on float32, [N, C, H, W] -> [N, C, 1, 1], with
// oneDNN's average pooling. It runs where a QAT model averages an unquantized tensor (ResNet's
// last residual output, a sum of two grids) before its next quantizer: averaging int8 values
// first would round twice, so the block writes float32 here and the classifier's input is
// quantized after the pooling, as in the fake-quantized model.
#pragma once

#include <memory>
#include <string>

#include "deploy/int8/int8_layer.h"

namespace qgrad::quant {

class Int8GlobalAvgPool : public Int8Layer {
 public:
  explicit Int8GlobalAvgPool(std::string name);
  ~Int8GlobalAvgPool() override;
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;

 private:
  struct Impl;
  std::string name_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace qgrad::quant
