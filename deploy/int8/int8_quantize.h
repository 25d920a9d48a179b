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

// Rounds half to even in the default rounding mode, exact for |v| < 2^22: (v + 1.5 * 2^23) -
// 1.5 * 2^23. Pure arithmetic, so it vectorises where std::nearbyint is a library call. F: float or
// a GCC / Clang vector of floats.
template <typename F>
F round_half_even_small(F v) {
  return (v + 12582912.0f) - 12582912.0f;
}

// Int8Quantize's arithmetic on one value, in the order its oneDNN primitives compute it: the clip
// for grids narrower than the type (bounds in real units, rounded to float), x * (1 / scale) in
// float, + zero point, saturation to the type, rounding half to even; the grid value as a float.
// For layers that quantize their float input themselves (Int8DirectConv2d); tested equal to
// Int8Quantize value for value (NaN, unspecified there, gives the type's lowest value here).
struct Int8QuantizeStep {
  explicit Int8QuantizeStep(const Int8Grid& grid);
  // F: float, or a GCC / Clang vector of floats (the comparisons and selects are lane-wise).
  template <typename F>
  F operator()(F x) const {
    if (clip) {
      x = x < lo ? F{} + lo : x;
      x = x > hi ? F{} + hi : x;
    }
    F v = x * inv_scale + zp;
    // Saturation; a NaN (which oneDNN's reorder leaves unspecified) becomes the type's lowest.
    v = v >= type_min ? v : F{} + type_min;
    v = v <= type_max ? v : F{} + type_max;
    return round_half_even_small(v);
  }
  float lo = 0, hi = 0, inv_scale = 1, zp = 0, type_min = 0, type_max = 0;
  bool clip = false;
};

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
