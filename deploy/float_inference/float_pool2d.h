// FloatPool2d: float32 pooling for inference with oneDNN's pooling_v2, on the input's layout (a
// blocked one from the convolution before it stays blocked): a max pool with PyTorch's kernel,
// stride, padding, dilation and ceil_mode, or a global average pool (AdaptiveAvgPool2d(1)) whose
// window is the whole input.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "deploy/float_inference/float_layer.h"

namespace qgrad::deploy {

struct FloatPool2dSpec {
  std::string name;             // the source layer, for messages
  bool global_average = false;  // true: the other fields are unused
  std::array<std::int64_t, 2> kernel{1, 1}, stride{1, 1}, padding{0, 0}, dilation{1, 1};
  bool ceil_mode = false;
};

class FloatPool2d : public FloatLayer {
 public:
  explicit FloatPool2d(FloatPool2dSpec spec);  // ValueError naming spec.name for a bad spec
  ~FloatPool2d() override;
  FloatActivation forward(const FloatActivation& x) override;
  std::string describe() const override;

 private:
  struct Entry;
  FloatPool2dSpec spec_;
  std::unique_ptr<FloatPrimitiveCache<Entry>> cache_;
};

}  // namespace qgrad::deploy
