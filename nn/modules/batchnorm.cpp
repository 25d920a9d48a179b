// BatchNorm layers: parameters, buffers, the momentum / cumulative-average bookkeeping of
// PyTorch's _BatchNorm.forward, and forward through ops/batch_norm.
#include "nn/modules/batchnorm.h"

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "nn/repr_format.h"
#include "ops/batch_norm/batch_norm.h"
#include "ops/binary/binary.h"

namespace qgrad::nn {

BatchNormBase::BatchNormBase(std::string name, const BatchNormOptions& options)
    : UnaryModule(std::move(name)), options_(options) {
  const auto c = options.num_features_;
  QGRAD_CHECK(c > 0, ValueError, this->name(), ": num_features must be positive, got ", c);
  QGRAD_CHECK(options.eps_ > 0, ValueError, this->name(), ": eps must be positive, got ",
              options.eps_);
  QGRAD_CHECK(options.cumulative_average_ || (options.momentum_ >= 0 && options.momentum_ <= 1),
              ValueError, this->name(), ": momentum must be in [0, 1], got ", options.momentum_);
  weight_ = register_parameter("weight", options.affine_ ? ones({c}) : Tensor());
  bias_ = register_parameter("bias", options.affine_ ? zeros({c}) : Tensor());
  const bool track = options.track_running_stats_;
  running_mean_ = register_buffer("running_mean", track ? zeros({c}) : Tensor());
  running_var_ = register_buffer("running_var", track ? ones({c}) : Tensor());
  num_batches_tracked_ = register_buffer(
      "num_batches_tracked", track ? zeros({}, TensorOptions().dtype(kInt64)) : Tensor());
}

void BatchNormBase::reset_running_stats() {
  if (!options_.track_running_stats_) return;
  NoGradGuard no_grad;
  running_mean_.zero_();
  running_var_.fill_(1.0);
  num_batches_tracked_.zero_();
}

void BatchNormBase::reset_parameters() {
  reset_running_stats();
  if (!options_.affine_) return;
  NoGradGuard no_grad;
  weight_.fill_(1.0);
  bias_.zero_();
}

Tensor BatchNormBase::forward(const Tensor& input) {
  QGRAD_CHECK(input.defined(), ValueError, name(), ": input is undefined");
  check_input_dim(input);
  QGRAD_CHECK(input.size(1) == options_.num_features_, ShapeError, name(), ": expected ",
              options_.num_features_, " channels (num_features) in dim 1, got shape ",
              shape_str(input.shape()));
  const bool training = is_training();
  const bool track = options_.track_running_stats_;
  double factor = options_.cumulative_average_ ? 0.0 : options_.momentum_;
  // Only the cumulative average reads the count on the host (as PyTorch does): on a GPU, item()
  // is a synchronisation per layer and step.
  std::int64_t batches = 0;
  if (training && track && options_.cumulative_average_) {
    batches = num_batches_tracked_.item<std::int64_t>() + 1;
    factor = 1.0 / static_cast<double>(batches);
  }
  // Batch statistics in training, and in eval when nothing is tracked.
  const bool use_batch_stats = training || !track;
  Tensor y = batch_norm(input, track ? running_mean_ : Tensor(), track ? running_var_ : Tensor(),
                        weight_, bias_, use_batch_stats, factor, options_.eps_);
  if (training && track) {
    // PyTorch's num_batches_tracked.add_(1), done after batch_norm so a rejected input (one
    // value per channel) leaves the count alone.
    NoGradGuard no_grad;
    if (options_.cumulative_average_)
      num_batches_tracked_.fill_(static_cast<double>(batches));
    else
      num_batches_tracked_.copy_(num_batches_tracked_ + 1.0);
  }
  return y;
}

std::string BatchNormBase::extra_repr() const {
  return std::to_string(options_.num_features_) + ", eps=" + py_float(options_.eps_) +
         ", momentum=" + (options_.cumulative_average_ ? "None" : py_float(options_.momentum_)) +
         ", affine=" + py_bool(options_.affine_) +
         ", track_running_stats=" + py_bool(options_.track_running_stats_);
}

void BatchNorm1d::check_input_dim(const Tensor& input) const {
  QGRAD_CHECK(input.dim() == 2 || input.dim() == 3, ShapeError,
              "BatchNorm1d: expected 2D or 3D input (got ", input.dim(), "D input of shape ",
              shape_str(input.shape()), ")");
}

void BatchNorm2d::check_input_dim(const Tensor& input) const {
  QGRAD_CHECK(input.dim() == 4, ShapeError, "BatchNorm2d: expected 4D input (got ", input.dim(),
              "D input of shape ", shape_str(input.shape()), ")");
}

}  // namespace qgrad::nn
