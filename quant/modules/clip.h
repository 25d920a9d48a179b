/// @file
/// Clip: pytorch_quantization's Clip module with learnable bounds, the clip stage of a
/// TensorQuantizer with learn_amax. Parameters clip_value_min / clip_value_max are 0-d float32
/// scalars; forward is learnable_clip (quant/learnable/learnable_clip.h): y = clamp(x, min, max)
/// computed as the reference's torch.min/torch.max (a tie returns the bound), with PACT gradients
/// for both bounds (dmin = sum of dy where x <= min, dmax = sum of dy where x >= max, dx = dy *
/// mask as a float multiply, so a masked element keeps the sign of dy on its zero). Runs on the
/// CPU and on CUDA (the bounds stay on the device; their checks are a kernel).
#pragma once

#include <string>

#include "nn/unary_module.h"
#include "quant/modules/quantizer_device.h"

namespace qgrad::quant {

/// pytorch_quantization's Clip module with learnable bounds (see the file comment).
class Clip : public nn::UnaryModule, public RunsOn {
 public:
  /// ValueError unless both are finite and min <= max.
  Clip(double clip_value_min, double clip_value_max, bool learn = true);

  Tensor forward(const Tensor& x) override;
  /// Every device with learnable_clip kernels: the CPU and CUDA.
  bool runs_on(Device device) const override { return device.is_cpu() || device.is_cuda(); }
  /// max(-min, max), differentiable in both bounds.
  Tensor amax() const;
  /// Sets the bounds to (clip_value_min, clip_value_max) (no gradient recorded); a TensorQuantizer
  /// with learn_amax passes (-amax, +amax). ValueError unless finite with min <= max.
  void set_bounds(double clip_value_min, double clip_value_max);

  /// The lower bound (0-d float32 parameter).
  const Tensor& clip_value_min() const { return min_; }
  /// The upper bound (0-d float32 parameter).
  const Tensor& clip_value_max() const { return max_; }

 private:
  Tensor min_, max_;
};

}  // namespace qgrad::quant
