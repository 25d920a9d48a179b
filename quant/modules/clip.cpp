// Learnable two-sided clip module.
#include "quant/modules/clip.h"

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "quant/learnable/learnable_clip.h"

namespace qgrad::quant {

namespace {
void check_bounds(const char* op, double lo, double hi) {
  QGRAD_CHECK(std::isfinite(lo) && std::isfinite(hi) && lo <= hi, ValueError, op,
              ": clip bounds must be finite with clip_value_min <= clip_value_max, got ", lo,
              " and ", hi);
}
}  // namespace

Clip::Clip(double clip_value_min, double clip_value_max, bool learn) : nn::UnaryModule("Clip") {
  check_bounds("Clip", clip_value_min, clip_value_max);
  min_ = register_parameter("clip_value_min", scalar_tensor(clip_value_min), learn);
  max_ = register_parameter("clip_value_max", scalar_tensor(clip_value_max), learn);
}

Tensor Clip::forward(const Tensor& x) {
  return learnable::learnable_clip(x, min_, max_);
}

Tensor Clip::amax() const {
  return learnable::learnable_clip_amax(min_, max_);
}

void Clip::set_bounds(double clip_value_min, double clip_value_max) {
  check_bounds("Clip::set_bounds", clip_value_min, clip_value_max);
  NoGradGuard no_grad;
  Tensor lo = min_, hi = max_;
  lo.fill_(clip_value_min);
  hi.fill_(clip_value_max);
}

}  // namespace qgrad::quant
