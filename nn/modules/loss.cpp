// Loss modules: construction-time validation and forwarding to ops/loss.
#include "nn/modules/loss.h"

#include "ops/loss/reduction.h"

namespace qgrad::nn {

CrossEntropyLoss::CrossEntropyLoss(const CrossEntropyOptions& options)
    : Module("CrossEntropyLoss"), options_(options) {
  parse_reduction(options.reduction_, "CrossEntropyLoss");
  QGRAD_CHECK(options.label_smoothing_ >= 0.0 && options.label_smoothing_ <= 1.0, ValueError,
              "CrossEntropyLoss: label_smoothing must be between 0.0 and 1.0, got ",
              options.label_smoothing_);
  if (options.weight_.defined()) {
    QGRAD_CHECK(options.weight_.dim() == 1, ShapeError,
                "CrossEntropyLoss: weight must be 1-D (one value per class), got shape ",
                shape_str(options.weight_.shape()));
    QGRAD_CHECK(is_floating(options.weight_.dtype()), DTypeError,
                "CrossEntropyLoss: weight must be floating, got ",
                dtype_name(options.weight_.dtype()));
  }
  // The buffer and options_.weight_ are one tensor, so to(device) moves what forward uses.
  options_.weight_ = register_buffer("weight", options.weight_);
}

Tensor CrossEntropyLoss::forward(const Tensor& input, const Tensor& target) {
  return cross_entropy(input, target, options_);
}

MSELoss::MSELoss(std::string reduction) : Module("MSELoss"), reduction_(std::move(reduction)) {
  parse_reduction(reduction_, "MSELoss");
}

Tensor MSELoss::forward(const Tensor& input, const Tensor& target) {
  return mse_loss(input, target, reduction_);
}

}  // namespace qgrad::nn
