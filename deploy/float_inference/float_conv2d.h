// FloatConv2d: a float32 2-D convolution for inference with oneDNN, a batch norm already folded
// into its weight and bias (compile_inference does that), a fused ReLU or ReLU6 as an eltwise
// post-op and, with `residual`, a residual add as oneDNN's sum post-op before it: the output
// starts as the residual (in place when the residual is the model's own activation in the output's
// layout) and oneDNN computes conv(x) + bias + residual, then the ReLU. Activations with a multiple
// of 16 channels are nChw16c (oneDNN's blocked layout; its direct AVX-512 kernel beat its NHWC
// brgconv choice on the zoo's small convolutions), other layouts and the weight's are oneDNN's
// choice (format_tag::any); an input in another layout is reordered first. The weight is reordered
// into the chosen layout once per input descriptor, when the primitive is built.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "deploy/float_inference/float_layer.h"

namespace qgrad::deploy {

struct FloatWeightedPrimitive;  // float_dnnl.h

struct FloatConv2dSpec {
  std::string name;  // the source layer, for messages: "layer '0' (Conv2d)"
  std::int64_t in_channels = 0, out_channels = 0, groups = 1;
  std::array<std::int64_t, 2> kernel{1, 1}, stride{1, 1}, padding{0, 0}, dilation{1, 1};
  std::vector<float> weight;  // [out, in / groups, kh, kw], row-major
  std::vector<float> bias;    // one per output channel; empty: none
  bool relu = false;
  double relu_max = 0;    // with relu: its upper bound (6: ReLU6); 0: none
  bool residual = false;  // forward(x, r) adds r (the output's shape) before the ReLU
};

class FloatConv2d : public FloatLayer {
 public:
  // Checks the spec's sizes; ValueError naming spec.name.
  explicit FloatConv2d(FloatConv2dSpec spec);
  ~FloatConv2d() override;
  FloatActivation forward(const FloatActivation& x) override;
  // With spec().residual: conv(x) + residual, then the ReLU.
  FloatActivation forward(const FloatActivation& x, const FloatActivation& residual);
  std::string describe() const override;
  const FloatConv2dSpec& spec() const { return spec_; }

 private:
  FloatActivation run(const FloatActivation& x, const FloatActivation* residual);
  FloatConv2dSpec spec_;
  std::unique_ptr<FloatPrimitiveCache<FloatWeightedPrimitive>> cache_;
};

}  // namespace qgrad::deploy
