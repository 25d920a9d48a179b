// FloatLinear: a float32 fully connected layer for inference with oneDNN's inner product, a ReLU
// fused as an eltwise post-op. A 4-D input [N, C, H, W] (a Flatten before the layer) is read in
// the layout the layer before wrote it, blocked included: the weight [out, C*H*W] is viewed as
// [out, C, H, W] (PyTorch's flatten order) and reordered once into the layout oneDNN pairs with
// that input, so the flatten costs nothing. An image batch whose images are dense (NHWC,
// nChw16c with a multiple of 16 channels) is read as the [N, C*H*W] matrix it is, with the
// weight's columns permuted to its order once: oneDNN 2.6 runs the 4-D form through a GEMM path
// about 10 times slower than its 2-D kernel. Output [N, out], oneDNN's layout (plain NC).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "deploy/float_inference/float_layer.h"

namespace qgrad::deploy {

struct FloatWeightedPrimitive;  // float_dnnl.h

struct FloatLinearSpec {
  std::string name;  // the source layer, for messages
  std::int64_t in_features = 0, out_features = 0;
  std::vector<float> weight;  // [out, in], row-major
  std::vector<float> bias;    // one per output feature; empty: none
  bool relu = false;
};

class FloatLinear : public FloatLayer {
 public:
  explicit FloatLinear(FloatLinearSpec spec);  // ValueError naming spec.name for a bad spec
  ~FloatLinear() override;
  FloatActivation forward(const FloatActivation& x) override;
  std::string describe() const override;

 private:
  FloatLinearSpec spec_;
  std::unique_ptr<FloatPrimitiveCache<FloatWeightedPrimitive>> cache_;
};

}  // namespace qgrad::deploy
