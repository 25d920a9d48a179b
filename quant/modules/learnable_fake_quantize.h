/// @file
/// LearnableFakeQuantize: torch.ao's _LearnableFakeQuantize as an nn module, the learned step size
/// quantizer: LSQ (Esser et al. 2020) with a symmetric qscheme (zero point fixed at 0) and LSQ+
/// (Bhalgat et al. 2020) with an affine qscheme (learnable zero point). scale and zero_point are
/// float32 Parameters ([1] per tensor, [channel_len] per channel along the observer's ch_axis).
///
/// forward(x), PyTorch's order:
///   static estimation on  -> observe x and copy the observer's qparams into scale / zero_point;
///   otherwise             -> clamp scale to >= eps (and, with an LSQ/minmax init that has not run
///                            yet, initialise scale / zero_point from this batch first);
///   fake quantization on  -> zero the zero point for symmetric schemes, then
///                            _fake_quantize_learnable_per_{tensor,channel}_affine with
///                            grad_factor 1/sqrt(numel(x) * quant_max) when use_grad_scaling.
/// Initialisation (init): Observer = PyTorch's (static estimate through the observer until
/// enable_param_learning()); LSQ = on the first learning batch s = 2 * mean|x| / sqrt(quant_max)
/// (per channel: over each channel's slice), zero point 0; MinMax = LSQ+'s min/max rule on the
/// first learning batch, s = (max0 - min0) / (quant_max - quant_min), zero point
/// quant_min - min0 / s with min0 = min(min x, 0), max0 = max(max x, 0). LSQ and MinMax modules
/// start in parameter-learning mode; the "initialized" buffer records that the init has run.
///
/// With a process group (synchronize_statistics.h) the observer and the data-driven
/// initialisation see the ranks' global batch: MinMax's minima / maxima are reduced exactly (the
/// bits of one process with the global batch); LSQ's mean|x| is the sum of the ranks' float64
/// sums over the global count, which may differ from one process's float64 mean in its last bits
/// and so, after rounding to the float32 scale, by at most one float32 ulp (the tests allow that);
/// grad scaling uses the global batch's element count (numel(x) * ranks: the ranks' parts are of
/// one size, as the data loader's shards are), so the averaged gradients are one process's.
///
/// State (PyTorch's keys plus "initialized"): "scale", "zero_point", "fake_quant_enabled",
/// "static_enabled", "learning_enabled", "eps", "initialized" and
/// "activation_post_process.{eps,min_val,max_val}".
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "nn/unary_module.h"
#include "quant/modules/calibratable.h"
#include "quant/modules/host_flag.h"
#include "quant/modules/observer_module.h"

namespace qgrad::quant {

/// How the learnable scale / zero point are initialised (see the file comment).
enum class LearnableInit { Observer, LSQ, MinMax };
const char* learnable_init_name(LearnableInit i);  ///< "observer", "lsq", "minmax"

/// The configuration of a LearnableFakeQuantize.
struct LearnableFakeQuantizeConfig {
  /// The observer's quant range is the quantizer's (PyTorch passes quant_min/max to it). Default:
  /// MovingAverageMinMaxObserver, quint8 [0, 255], per_tensor_affine.
  ObserverConfig observer;
  double scale = 1.0;             ///< initial scale (finite, > 0)
  double zero_point = 0.0;        ///< initial zero point
  std::int64_t channel_len = -1;  ///< -1 per tensor; > 0 with a per-channel observer
  bool use_grad_scaling = false;  ///< scale the gradients by 1/sqrt(numel * quant_max)
  LearnableInit init = LearnableInit::Observer;  ///< how scale / zero point are initialised
};

/// torch.ao's _LearnableFakeQuantize as an nn module (see the file comment).
class LearnableFakeQuantize : public nn::UnaryModule, public Calibratable, public SyncedStatistics {
 public:
  /// A maker of identically configured modules (with_args()).
  using Factory = std::function<std::shared_ptr<LearnableFakeQuantize>()>;

  /// ValueError: quant_min >= quant_max, channel_len inconsistent with the observer,
  /// per_channel_affine_float_qparams, scale not finite and > 0.
  explicit LearnableFakeQuantize(
      const LearnableFakeQuantizeConfig& config = LearnableFakeQuantizeConfig());
  /// A factory of modules built with config.
  static Factory with_args(const LearnableFakeQuantizeConfig& config);

  /// Fake-quantizes x with the learnable scale and zero point (observing and copying the
  /// observer's qparams first when static estimation is on); see the file comment.
  Tensor forward(const Tensor& x) override;
  /// The scale clamped to >= eps, the zero point rounded half to even and clamped (int64).
  ao::QParams calculate_qparams();

  /// PyTorch's modes: learning (parameters learn, no observation), static estimate (observe and
  /// copy qparams, fake-quantize), static observation (observe only, x passes through).
  void enable_param_learning();
  /// Static estimate: no learning, observe and copy the qparams, fake-quantize.
  void enable_static_estimate();
  /// Static observation: no learning, observe only, x passes through.
  void enable_static_observation();
  void toggle_qparam_learning(bool on);  ///< also sets requires_grad of scale / zero_point
  void toggle_fake_quant(bool on);       ///< switches fake quantization
  void toggle_observer_update(bool on);  ///< switches observation with static estimates
  bool learning_enabled() const;         ///< whether the parameters learn
  bool static_enabled() const;           ///< whether static estimation is on
  bool fake_quant_enabled() const;       ///< whether forward() fake-quantizes
  bool is_initialized() const;  ///< whether the parameters were initialised (see LearnableInit)

  /// The learnable scale (float32).
  const Tensor& scale() const { return scale_; }
  /// The learnable zero point (float32).
  const Tensor& zero_point() const { return zero_point_; }
  /// The lowest integer of the range.
  std::int64_t quant_min() const { return observer_->quant_min(); }
  /// The highest integer of the range.
  std::int64_t quant_max() const { return observer_->quant_max(); }
  /// Whether the observer is per channel.
  bool is_per_channel() const { return observer_->is_per_channel(); }
  /// The observer's channel axis (-1 per tensor).
  std::int64_t ch_axis() const { return observer_->ch_axis(); }
  /// The observer child.
  const std::shared_ptr<Observer>& activation_post_process() const { return observer_; }
  /// The configuration.
  const LearnableFakeQuantizeConfig& config() const { return config_; }

  std::string extra_repr() const override;

  /// The CPU, and a GPU when the observer runs there (every observer but the histogram one).
  bool runs_on(Device device) const override;

  /// The initialisation and the observer reduce their statistics over `group`.
  void set_process_group(std::shared_ptr<distributed::ProcessGroup> group) override;

  /// Static observation; then scale / zero_point from the observer, parameter learning on.
  void start_calibration() override;
  /// Scale / zero point from the observer and parameter learning on; with options.strict,
  /// ValueError when the observer saw no data.
  void finish_calibration(const CalibrationOptions& options) override;

 private:
  void init_from_batch(const Tensor& x);
  void copy_observer_qparams();

  LearnableFakeQuantizeConfig config_;
  std::shared_ptr<Observer> observer_;
  Tensor scale_, zero_point_;
  Tensor fake_quant_enabled_, static_enabled_, learning_enabled_, eps_, initialized_;
  // The flags as forward() reads them: no host wait on a GPU.
  HostFlag fake_quant_on_{Tensor()}, static_on_{Tensor()}, learning_on_{Tensor()},
      initialized_on_{Tensor()};
};

}  // namespace qgrad::quant
