// Int8Add: a residual addition of two int8 activations on their own grids, as a QuantAdd
// computes it, (a - zp_a) * s_a + (b - zp_b) * s_b, then an optional ReLU, written on the grid
// `output` (or as float32 without it), with oneDNN's binary add: the input scales s_a / s_out and
// s_b / s_out as its source scales, the input zero points and the output zero point as one
// linear post-op, then the clip (ReLU and the output grid's bounds; int8_post_ops.h).
//
// Why not the convolution's sum post-op: QuantAdd rounds the convolution output to its own grid
// before adding, which a sum post-op fused into the convolution would skip; the separate add
// keeps the int8 model equal to the fake-quantized one. Inputs of the same shape, any layout;
// output in NHWC.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "deploy/int8/int8_grid.h"
#include "deploy/int8/int8_layer.h"

namespace qgrad::quant {

struct Int8AddSpec {
  std::string name;
  Int8Grid a, b;
  std::optional<Int8Grid> output;  // none: float32
  bool relu = false;
};

class Int8Add : public Int8Layer {
 public:
  explicit Int8Add(Int8AddSpec spec);
  ~Int8Add() override;
  // An add has two inputs: forward(x) is a ValueError; use add(a, b).
  Tensor forward(const Tensor& x) override;
  Tensor add(const Tensor& a, const Tensor& b);
  std::string describe() const override;

 private:
  struct Impl;
  Int8AddSpec spec_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace qgrad::quant
