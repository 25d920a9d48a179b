// Int8Conv2d: a 2-D convolution on integer data with oneDNN's int8 convolution: uint8 / int8
// input on the grid `input`, int8 weights with one real scale per output channel, int32
// accumulation, and requantisation to the grid `output` in the same primitive (output scales
// s_in * s_w[c] / s_out, the input zero point subtracted by oneDNN, which also handles padding,
// the output zero point added), with the ReLU fused as a clip post-op and, for narrower grids
// (reduce_range, sub-8-bit), the grid's bounds in the same clip. Without `output` the result is
// float32: s_in * s_w[c] * acc + bias[c] (ReLU fused as an eltwise post-op).
//
// With `residual`, forward(x, r) also adds r, an int8 tensor of the output's shape on that grid,
// through oneDNN's sum post-op before the ReLU: the output buffer starts as a copy of r and
// oneDNN computes out_scale * (acc + bias) + (s_r / s_out) * (r - zp_r) in place (a residual
// add fused into the convolution; convert() uses it only when asked, see convert.h).
//
// Where oneDNN 2.6 would run its reference int8 kernel (an input channel count that is not a
// multiple of 4, with spatial padding: one grey channel, say, about 200 times slower than its
// jit kernels) and a jit kernel exists for the count rounded up to 4, the input is copied into
// zero-padded channels with zero weights, which leaves every integer sum as it was.
//
// The weight scales may be negative (a batch norm folded in with gamma < 0); the bias is in
// real units and becomes bias[c] / (s_in * s_w[c]) in accumulator units, where oneDNN adds it.
// Input [N, C, H, W] of the input grid's dtype in any layout; output [N, O, OH, OW] in NHWC.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "deploy/int8/int8_grid.h"
#include "deploy/int8/int8_layer.h"

namespace qgrad::quant {

struct Int8Conv2dSpec {
  std::string name;  // the source layer, for messages: "layer '0' (QuantConv2d)"
  std::int64_t in_channels = 0, out_channels = 0, groups = 1;
  std::array<std::int64_t, 2> kernel{1, 1}, stride{1, 1}, padding{0, 0}, dilation{1, 1};
  std::vector<std::int8_t> weight;   // [out, in / groups, kh, kw], row-major
  std::vector<double> weight_scale;  // one per output channel, nonzero
  std::vector<double> bias;          // one per output channel in real units; empty: none
  Int8Grid input;
  std::optional<Int8Grid> output;  // none: float32 output
  bool relu = false;
  double relu_max = 0;               // with relu: its upper bound in real units (6: ReLU6); 0: none
  std::optional<Int8Grid> residual;  // a tensor added by the sum post-op (needs `output`)
};

// Checks a spec's sizes and scales; ValueError naming spec.name.
void check_int8_conv_spec(const Int8Conv2dSpec& spec);

// What the accumulator of output channel c becomes before the post-ops, as oneDNN applies it:
// (acc + bias_acc[c]) * out_scale[c], with out_scale[c] = s_in * s_w[c] / s_out (s_out 1 for a
// float32 output) and bias_acc[c] = bias[c] / (s_in * s_w[c]), both rounded to float32.
struct Int8ConvRequant {
  std::vector<float> out_scale, bias_acc;
};
Int8ConvRequant int8_conv_requant(const Int8Conv2dSpec& spec);

class Int8Conv2d : public Int8Layer {
 public:
  // Checks the spec (sizes, scales) and throws ValueError naming spec.name.
  explicit Int8Conv2d(Int8Conv2dSpec spec);
  ~Int8Conv2d() override;
  Tensor forward(const Tensor& x) override;
  // With spec().residual: conv(x) + residual, requantized (see above).
  Tensor forward(const Tensor& x, const Tensor& residual);
  std::string describe() const override;
  const Int8Conv2dSpec& spec() const { return spec_; }

 private:
  struct Impl;
  Tensor run(const Tensor& x, const Tensor* residual);
  Int8Conv2dSpec spec_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace qgrad::quant
