/// @file
/// FrozenQuantizerStatistics: while it lives, no quantizer of a model learns its quantization
/// parameters from the data passing through it: the observers of torch.ao FakeQuantize and
/// Horizon FakeQuantize modules are switched off (they then quantize with the scale and zero point
/// training left) and LearnableFakeQuantize static estimation is off. The destructor puts every
/// switch back as it was. NVIDIA TensorQuantizer and AIMET quantizers gather statistics only while
/// calibrating and need nothing. `qgrad eval` and the CLI's per-epoch test pass run under it, so a
/// test pass quantizes as the converted model would and leaves the model unchanged: PyTorch's
/// observers ignore eval mode, and a moving-average observer fed the test set would both leak it
/// into the checkpoint and make the accuracy depend on the evaluation batch size.
#pragma once

#include <functional>
#include <vector>

#include "nn/module.h"

namespace qgrad::quant {

/// While it lives, no quantizer of a model learns its parameters from the data (see the file
/// comment).
class FrozenQuantizerStatistics {
 public:
  /// Switches the statistics of model's quantizers off.
  explicit FrozenQuantizerStatistics(nn::Module& model);
  ~FrozenQuantizerStatistics();  ///< puts every switch back as it was
  FrozenQuantizerStatistics(const FrozenQuantizerStatistics&) = delete;
  FrozenQuantizerStatistics& operator=(const FrozenQuantizerStatistics&) = delete;

  /// How many quantizers were switched (those whose statistics were on).
  std::size_t frozen() const { return restore_.size(); }

 private:
  std::vector<std::function<void()>> restore_;
};

}  // namespace qgrad::quant
