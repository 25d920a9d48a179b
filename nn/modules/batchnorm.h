/// @file
/// BatchNorm1d / BatchNorm2d: batch normalisation layers, as torch.nn.BatchNorm1d/2d. They hold
/// the parameters weight (init 1) and bias (init 0) when affine, and the buffers running_mean
/// (0), running_var (1) and num_batches_tracked (int64 scalar, 0) when track_running_stats,
/// registered in PyTorch's order so state_dict keys and layouts match a PyTorch model's.
///
/// Training mode normalises with batch statistics and, when tracking, increments
/// num_batches_tracked and updates the running statistics with `momentum` (or, when momentum is
/// unset, with the cumulative average 1 / num_batches_tracked, as PyTorch's momentum=None).
/// Evaluation mode normalises with the running statistics, or with batch statistics when they
/// are not tracked. Nothing is random, so no Generator is needed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "nn/unary_module.h"

namespace qgrad::nn {

///   BatchNorm2d(BatchNormOptions(16).momentum(0.01).affine(false))
struct BatchNormOptions {
  /// Options for `num_features` channels (implicit, so a count converts).
  BatchNormOptions(std::int64_t num_features) : num_features_(num_features) {}  // NOLINT
  /// Sets eps.
  BatchNormOptions& eps(double e) {
    eps_ = e;
    return *this;
  }
  /// std::nullopt = cumulative moving average (PyTorch's momentum=None).
  BatchNormOptions& momentum(std::optional<double> m) {
    cumulative_average_ = !m.has_value();
    momentum_ = m.value_or(0.0);
    return *this;
  }
  /// Sets whether the module has a learnable weight and bias.
  BatchNormOptions& affine(bool a) {
    affine_ = a;
    return *this;
  }
  /// Sets whether running statistics are kept (and used in eval mode).
  BatchNormOptions& track_running_stats(bool t) {
    track_running_stats_ = t;
    return *this;
  }

  std::int64_t num_features_;  ///< channels (C of [N, C, ...])
  double eps_ = 1e-5;          ///< added to the variance before the square root
  /// Two plain fields, not a std::optional<double>: GCC 13 (-Werror=uninitialized) flags the copy
  /// of a disengaged optional's payload in every inlined copy of these options. momentum_ is read
  /// only when !cumulative_average_.
  double momentum_ = 0.1;
  bool cumulative_average_ =
      false;            ///< running statistics as a cumulative average (momentum None in PyTorch)
  bool affine_ = true;  ///< learnable per-channel weight and bias
  bool track_running_stats_ = true;  ///< keep running mean and variance
};

/// The shared implementation; BatchNorm1d and BatchNorm2d differ only in the input ranks they
/// accept and their names.
class BatchNormBase : public UnaryModule {
 public:
  Tensor forward(const Tensor& input) override;
  /// Running statistics back to 0 / 1 and num_batches_tracked to 0.
  void reset_running_stats();
  /// reset_running_stats() plus weight 1 and bias 0.
  void reset_parameters();
  /// "16, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True"
  std::string extra_repr() const override;

  /// The options.
  const BatchNormOptions& options() const { return options_; }
  const Tensor& weight() const { return weight_; }  ///< undefined unless affine
  /// The learnable shift; undefined unless affine.
  const Tensor& bias() const { return bias_; }
  const Tensor& running_mean() const { return running_mean_; }  ///< undefined unless tracking
  /// The running variance; undefined unless tracking.
  const Tensor& running_var() const { return running_var_; }
  /// The number of training batches seen (int64 0-d); undefined unless tracking.
  const Tensor& num_batches_tracked() const { return num_batches_tracked_; }

 protected:
  /// Throws ValueError for num_features <= 0, eps <= 0 or momentum outside [0, 1].
  BatchNormBase(std::string name, const BatchNormOptions& options);
  /// Throws ShapeError (naming the layer) unless `input` has an accepted rank.
  virtual void check_input_dim(const Tensor& input) const = 0;

 private:
  BatchNormOptions options_;
  Tensor weight_, bias_, running_mean_, running_var_, num_batches_tracked_;
};

/// Input [N, C] or [N, C, L].
class BatchNorm1d : public BatchNormBase {
 public:
  /// A BatchNorm1d with `options`.
  explicit BatchNorm1d(const BatchNormOptions& options) : BatchNormBase("BatchNorm1d", options) {}

 protected:
  void check_input_dim(const Tensor& input) const override;
};

/// Input [N, C, H, W].
class BatchNorm2d : public BatchNormBase {
 public:
  /// A BatchNorm2d with `options`.
  explicit BatchNorm2d(const BatchNormOptions& options) : BatchNormBase("BatchNorm2d", options) {}

 protected:
  void check_input_dim(const Tensor& input) const override;
};

}  // namespace qgrad::nn
