/// @file
/// Observer: torch.ao's observers as nn modules (the `activation_post_process` child of a
/// FakeQuantize). It owns one of the plain observer state classes of quant/observer and registers
/// its statistics as buffers under PyTorch's names, so state_dict() holds "eps", "min_val",
/// "max_val" (and "histogram" for HistogramObserver). forward(x) records x's statistics without
/// gradient and returns x unchanged. Per-channel statistics start empty ([0]) and take the
/// channel count of the first batch (rebound in place, see lazy_buffer.h). With a process group
/// (synchronize_statistics.h) the statistics are those of the ranks' global batch.
///
/// ObserverConfig describes an observer (kind, dtype/qscheme/range options, averaging constant,
/// channel axis, histogram bins) and builds it, so quantizers can be configured by value.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/unary_module.h"
#include "quant/modules/quantizer_device.h"
#include "quant/observer/uniform_observer.h"
#include "quant/synced_statistics.h"

namespace qgrad::quant {

/// The torch.ao observer classes an Observer module can wrap.
enum class ObserverKind {
  MinMax,                         ///< running min/max
  MovingAverageMinMax,            ///< first batch, then m += c * (batch - m)
  PerChannelMinMax,               ///< per index of ch_axis
  MovingAveragePerChannelMinMax,  ///< moving average per channel
  Histogram                       ///< per tensor, PyTorch's HistogramObserver
};
/// PyTorch's class name ("MovingAverageMinMaxObserver", ...).
const char* observer_kind_name(ObserverKind k);
bool is_per_channel(ObserverKind k);  ///< whether k is one of the per-channel kinds

/// Which observer to build and its options.
struct ObserverConfig {
  ObserverKind kind = ObserverKind::MovingAverageMinMax;  ///< the observer class
  ao::ObserverOptions options;       ///< dtype, qscheme, reduce_range, quant range, eps
  double averaging_constant = 0.01;  ///< moving-average kinds
  std::int64_t ch_axis = 0;          ///< per-channel kinds
  std::int64_t bins = 2048;          ///< Histogram
  std::int64_t upsample_rate = 128;  ///< Histogram

  /// Builds the observer (the state classes validate the options: ValueError).
  std::unique_ptr<ao::UniformQuantizationObserver> make() const;
};

/// A torch.ao observer as an nn module, its statistics registered as buffers (see the file
/// comment).
class Observer : public nn::UnaryModule, public RunsOn, public SyncedStatistics {
 public:
  /// Builds config's observer (ValueError for invalid options).
  explicit Observer(const ObserverConfig& config);

  /// Records the statistics of x (no gradient) and returns x.
  Tensor forward(const Tensor& x) override;
  /// The observer reduces its batch statistics over `group` (synced_statistics.h).
  void set_process_group(std::shared_ptr<distributed::ProcessGroup> group) override;
  /// The CPU, and CUDA for the min/max observers (not HistogramObserver).
  bool runs_on(Device device) const override;
  /// Scale and zero point from the statistics (scale [1.0], zero point [0] before any data).
  ao::QParams calculate_qparams() const;
  void reset_min_max_vals();  ///< forgets the statistics

  /// The configuration.
  const ObserverConfig& config() const { return config_; }
  /// Whether the kind is per channel.
  bool is_per_channel() const { return quant::is_per_channel(config_.kind); }
  /// config's ch_axis per channel, else -1.
  std::int64_t ch_axis() const { return is_per_channel() ? config_.ch_axis : -1; }
  /// The lowest integer of the range.
  std::int64_t quant_min() const { return observer_->quant_min(); }
  /// The highest integer of the range.
  std::int64_t quant_max() const { return observer_->quant_max(); }
  /// The wrapped state class.
  const ao::UniformQuantizationObserver& observer() const { return *observer_; }
  /// The registered statistics (0-d per tensor; [C] per channel, [0] before the first batch).
  const Tensor& min_val() const { return min_val_; }
  /// The running max (see min_val()).
  const Tensor& max_val() const { return max_val_; }

  /// "min_val=-1.5, max_val=2.25" (per channel: the values as a list).
  std::string extra_repr() const override;

 private:
  /// The observer's own handles on its statistics, in the order of registered_.
  std::vector<Tensor*> state_handles();
  void sync();

  ObserverConfig config_;
  std::unique_ptr<ao::UniformQuantizationObserver> observer_;
  Tensor min_val_, max_val_;
  std::vector<Tensor> registered_;
};

}  // namespace qgrad::quant
