// Int8Quantize: the entry into the quantized domain, float32 -> uint8 / int8 on a grid, as the
// first quantized layer's input quantizer computes it: q = clamp(round(x / scale) + zero_point,
// quant_min, quant_max), rounding half to even. oneDNN's reorder does the scaling, rounding,
// zero point and saturation to the storage type (x times the float reciprocal of the scale, as
// torch.ao's kernel multiplies by its inv_scale); a grid narrower than the type is clipped first
// in real units, [(quant_min - zp) * scale, (quant_max - zp) * scale], as the ONNX exporter's
// Clip does. Input [N, C, H, W] (output in NHWC) or [N, K].
#pragma once

#include <memory>
#include <string>

#include "deploy/int8/int8_grid.h"
#include "deploy/int8/int8_layer.h"

namespace qgrad::quant {

class Int8Quantize : public Int8Layer {
 public:
  Int8Quantize(std::string name, Int8Grid grid);
  ~Int8Quantize() override;
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;
  const Int8Grid& grid() const { return grid_; }

 private:
  struct Impl;
  std::string name_;
  Int8Grid grid_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace qgrad::quant
