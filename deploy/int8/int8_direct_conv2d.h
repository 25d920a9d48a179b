// Int8DirectConv2d: an int8 convolution for layers with few inputs per output, a grey image's
// first layer above all (lenet5bn: 1 channel, 5x5, 6 outputs). oneDNN's int8 kernels put
// channels in the vector lanes, four input channels per VNNI step, so with one input channel and
// six outputs most lanes idle and the layer ran slower than its float32 twin. Here the output
// columns fill the lanes instead (16 per vector), and the layer's max pooling can be fused.
//
// The integer sums are exact in float32: each product (x - zp_in) * w and each partial sum is an
// integer of magnitude at most in * kh * kw * 255 * 128 < 2^24 (supports() bounds the count), so
// float arithmetic gives the int32 accumulator whatever the order. Where the build targets
// AVX-512 VNNI and VBMI the sums are int8 dot products instead (vpdpbusd, four taps per
// instruction, the input bytes of four neighbouring columns gathered by a byte permute; the
// input zero point enters as a per-channel correction): the same integers.
// Requantisation follows the arithmetic of oneDNN's int8 convolution in Int8Conv2d, step by step in
// float32: v = (acc + bias_acc[c]) * out_scale[c], the clip (fused ReLU, grid bounds) relative to
// the output zero point, + zero point, rounding half to even, saturation to the type. The result is
// the same grid values as Int8Conv2d's (tested bit for bit).
//
// With a pool (MaxPool2d with kernel = stride = k, no padding, no dilation, floor mode), each k x k
// window is reduced in the same pass: requantisation is monotone in the accumulator (increasing,
// or decreasing for a negative scale from a folded batch norm), so the window's largest (smallest)
// accumulator, requantised once, is the maximum of the requantised values, the max pooling of
// Int8MaxPool2d. Input [N, C, H, W] of the input grid's dtype (or float32, quantized
// here, for the model's first layer) in any layout; output NHWC, as every int8 layer writes it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "deploy/int8/int8_conv2d.h"
#include "deploy/int8/int8_layer.h"
#include "deploy/int8/int8_max_pool2d.h"

namespace qgrad::quant {

struct Int8DirectConv2dOptions {
  // The layer takes the float32 input and quantizes it to spec.input itself (Int8QuantizeStep:
  // Int8Quantize's arithmetic), so the model's entry needs no separate pass.
  bool quantize_input = false;
  // Where the build target has AVX-512 VNNI and VBMI (has_integer_kernel()), sum with int8 dot
  // products, four taps per instruction; false (or without them): float32 multiply-adds. Both
  // give the same integers.
  bool integer_kernel = true;
};

class Int8DirectConv2d : public Int8Layer {
 public:
  // True when `spec` can run here: groups 1, stride 1, dilation 1, an int8 output grid, no
  // residual, and at most kMaxInputsPerOutput input values per output (the exactness bound).
  static bool supports(const Int8Conv2dSpec& spec);
  // supports(), and few enough output channels (<= kPreferredMaxOutChannels, one pass of the
  // kernel) that oneDNN's int8 kernels, which put 16 output channels in a vector, leave at least
  // half their lanes idle: where this layer is the faster choice (measured without a pool: 1.8x
  // oneDNN at 6 channels, 1.4x at 8, 0.9x at 12, 0.6x at 16). convert() uses it.
  static bool preferred(const Int8Conv2dSpec& spec);
  static constexpr std::int64_t kPreferredMaxOutChannels = 8;
  // True when `pool` can be fused: kernel = stride, no padding, no dilation, floor mode.
  static bool supports_pool(const Int8MaxPool2dSpec& pool);
  static constexpr std::int64_t kMaxInputsPerOutput = 64;

  // Whether this build has the integer kernel (AVX-512 VNNI and VBMI at compile time).
  static bool has_integer_kernel();

  // ValueError naming spec.name (or pool->name) when supports() / supports_pool() is false or
  // the spec is inconsistent (as Int8Conv2d checks it).
  Int8DirectConv2d(Int8Conv2dSpec spec, std::optional<Int8MaxPool2dSpec> pool,
                   Int8DirectConv2dOptions options = {});
  ~Int8DirectConv2d() override;
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;

 private:
  struct Impl;  // what forward() reads: the kernels' weights and per-channel requantisation
  Int8Conv2dSpec spec_;
  std::optional<Int8MaxPool2dSpec> pool_;
  Int8DirectConv2dOptions options_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace qgrad::quant
