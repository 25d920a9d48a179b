/// @file
/// TensorQuantizer: the NVIDIA (pytorch_quantization / TensorRT Model Optimizer) quantizer module,
/// configured by a QuantDescriptor and owning its calibrator.
///
/// forward(x), in this order (pytorch_quantization's):
///   disabled               -> x unchanged.
///   calibrating            -> collect statistics of x (MaxCalibrator, HistogramCalibrator, or
///                             per-block max for static block quantization).
///   quantizing             -> fake quantization (or real integer quantization when fake_quant is
///                             false) with amax = the "_amax" buffer when set, else the dynamic
///                             amax = max |x| over the non-kept axes (axis = the kept axes), times
///                             scale_amax when given. Integer num_bits use fake_tensor_quant
///                             (honouring unsigned and narrow_range), (E,M) num_bits the scaled
///                             minifloat cast, block_sizes block_fake_quant (dynamic blocks always
///                             use the batch's per-block amax).
///   neither                -> x (or, with learn_amax, clip(x)).
/// learn_amax (per tensor only): a child Clip "clip" with learnable clip_value_min/max starting at
/// -amax / +amax (amax from the descriptor, else 1.0 as pytorch_quantization); the quantized
/// output is fake_quant(clip(x), max(-cmin, cmax)), so the bounds learn through PACT gradients
/// and "_amax" follows max(-cmin, cmax). (pytorch_quantization quantizes the unclipped input
/// with a stale _amax there; qgrad follows the spec.)
///
/// State (state_dict): "_amax" float32 (0-d per tensor; the keepdim shape such as [C,1,1,1] per
/// channel; the block grid for static blocks) where NaN means "not set" (dynamic amax); a per-
/// channel or block amax whose shape is not known yet is empty ([0]) until calibrated or set
/// (give amax_shape to fix it up front, as QuantLinear/QuantConv2d do for weights); the flags
/// "_disabled", "_if_quant", "_if_calib" (uint8 0-d); with learn_amax "clip.clip_value_min/max".
/// Calibrator statistics are not part of the state.
///
/// Printout as pytorch_quantization's repr, e.g.
///   TensorQuantizer(8bit fake axis=0 amax=[0.0123, 0.5000](16) calibrator=MaxCalibrator quant)
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "nn/unary_module.h"
#include "quant/modules/calibratable.h"
#include "quant/modules/clip.h"
#include "quant/modules/host_flag.h"
#include "quant/nvidia/block_quant.h"
#include "quant/nvidia/calibrator.h"
#include "quant/nvidia/quant_descriptor.h"
#include "quant/synced_statistics.h"

namespace qgrad::quant {

/// The module options of a TensorQuantizer that are not in its QuantDescriptor (chainable
/// setters).
struct TensorQuantizerOptions {
  /// The shape of a per-channel or block amax when known up front (a weight's); registers "_amax"
  /// with that shape (not set) so checkpoints load without a calibration pass.
  std::optional<Shape> amax_shape_;
  /// Histogram calibrator settings (calib_method "histogram").
  std::int64_t num_bins_ = 2048;
  bool skip_zeros_ = false;  ///< leave zeros out of the histogram
  /// Initial switches (pytorch_quantization's defaults: enabled, quantizing, not calibrating).
  bool disabled_ = false;
  bool if_quant_ = true;   ///< start quantizing
  bool if_calib_ = false;  ///< start calibrating

  /// Sets amax_shape_.
  TensorQuantizerOptions& amax_shape(Shape s) {
    amax_shape_ = std::move(s);
    return *this;
  }
  /// Sets num_bins_.
  TensorQuantizerOptions& num_bins(std::int64_t n) {
    num_bins_ = n;
    return *this;
  }
  /// Sets skip_zeros_.
  TensorQuantizerOptions& skip_zeros(bool s) {
    skip_zeros_ = s;
    return *this;
  }
  /// Sets disabled_.
  TensorQuantizerOptions& disabled(bool d) {
    disabled_ = d;
    return *this;
  }
  /// Sets if_quant_.
  TensorQuantizerOptions& if_quant(bool q) {
    if_quant_ = q;
    return *this;
  }
  /// Sets if_calib_.
  TensorQuantizerOptions& if_calib(bool c) {
    if_calib_ = c;
    return *this;
  }
};

/// pytorch_quantization's TensorQuantizer (with TensorRT Model Optimizer's block and FP8
/// formats) as an nn module (see the file comment).
class TensorQuantizer : public nn::UnaryModule, public Calibratable, public SyncedStatistics {
 public:
  /// ValueError for combinations the quantizer cannot run: histogram calibration with (E,M)
  /// num_bits or block_sizes, real quantization (fake_quant false) with (E,M) num_bits or
  /// block_sizes, an amax_shape that contradicts the descriptor's amax.
  explicit TensorQuantizer(const nvidia::QuantDescriptor& desc = nvidia::QuantDescriptor(),
                           const TensorQuantizerOptions& options = TensorQuantizerOptions());

  Tensor forward(const Tensor& x) override;

  // ---- switches ----
  void enable();               ///< clears the "_disabled" switch
  void disable();              ///< sets "_disabled": x passes through unchanged
  void enable_quant();         ///< quantizes in forward()
  void disable_quant();        ///< stops quantizing
  void enable_calib();         ///< collects calibration statistics in forward()
  void disable_calib();        ///< stops collecting statistics
  bool is_enabled() const;     ///< not disabled
  bool quant_enabled() const;  ///< whether forward() quantizes
  bool calib_enabled() const;  ///< whether forward() collects statistics

  // ---- amax ----
  /// True when "_amax" holds a value (or learn_amax, whose amax is always defined).
  bool has_amax() const;
  /// The amax in use (detached): max(-cmin, cmax) with learn_amax, the buffer when set, else
  /// undefined (dynamic).
  Tensor amax() const;
  /// Sets amax (finite, >= 0; one value per tensor, any broadcastable shape per channel). With
  /// learn_amax the clip bounds become -amax / +amax.
  void set_amax(const Tensor& amax);
  void set_amax(double amax);  ///< set_amax with one value
  /// Back to "not set" (dynamic amax); the buffer keeps its shape.
  void reset_amax();
  /// The amax the last quantizing forward used (detached, times scale_amax when given): for a
  /// dynamic quantizer the batch's max |x| (keepdim shape per channel), else the buffer or the
  /// learned amax. Undefined before the first quantizing forward and for block_sizes (the block
  /// kernels compute their amax inside). Not state (not in state_dict).
  const Tensor& last_amax() const { return last_amax_; }

  /// Loads amax from the calibrator: method "max" for a max calibrator (and static blocks);
  /// "entropy", "mse" or "percentile" for a histogram calibrator. A quantizer that saw no data
  /// raises ValueError when strict (returns false and keeps amax otherwise). With learn_amax the
  /// clip is initialised to -amax / +amax as well (init_learn_amax). Returns true when loaded.
  bool load_calib_amax(const std::string& method = "max",
                       const nvidia::HistogramAmaxOptions& options = nvidia::HistogramAmaxOptions(),
                       bool strict = true);
  /// Sets the clip bounds to -amax / +amax (learn_amax only; amax must be set).
  void init_learn_amax();
  /// Drops the statistics collected so far.
  void reset_calibrator();

  /// The quantization descriptor.
  const nvidia::QuantDescriptor& descriptor() const { return desc_; }
  /// The scale of the last real quantization (fake_quant false), undefined before.
  const Tensor& scale() const { return scale_; }
  /// The max calibrator (null without one).
  const nvidia::MaxCalibrator* max_calibrator() const { return max_calib_.get(); }
  /// The histogram calibrator (null without one).
  const nvidia::HistogramCalibrator* histogram_calibrator() const { return hist_calib_.get(); }
  /// The learn_amax clip child (null without learn_amax).
  std::shared_ptr<Clip> clip() const { return clip_; }

  std::string extra_repr() const override;
  /// The CPU, and a GPU unless the quantizer has block_sizes, a histogram calibrator or
  /// learn_amax (their kernels run on the CPU only so far).
  bool runs_on(Device device) const override;

  /// Calibratable: disable_quant + enable_calib; then load_calib_amax (max calibrators "max",
  /// histogram ones options.method) + disable_calib + enable_quant. Disabled and dynamic
  /// quantizers are left alone.
  void start_calibration() override;
  void finish_calibration(const CalibrationOptions& options) override;
  /// The max and histogram calibrators reduce their statistics over `group`
  /// (synchronize_statistics.h). The static block quantizer's per-block amax is not reduced:
  /// its block grid follows the input's shape, which a batch split changes.
  void set_process_group(std::shared_ptr<distributed::ProcessGroup> group) override;

 private:
  Tensor quant_forward(const Tensor& x);
  Tensor dynamic_amax(const Tensor& x) const;
  bool is_dynamic() const;
  void write_amax(const Tensor& value);
  void sync_learned_amax();

  nvidia::QuantDescriptor desc_;
  Tensor amax_;  ///< "_amax"
  Tensor disabled_, if_quant_, if_calib_;
  // The flags and "has an amax" as forward() reads them: no host wait on a GPU.
  HostFlag disabled_on_{Tensor()}, quant_on_{Tensor()}, calib_on_{Tensor()}, has_amax_on_{Tensor()};
  Tensor scale_;
  Tensor last_amax_;
  std::shared_ptr<Clip> clip_;
  std::unique_ptr<nvidia::MaxCalibrator> max_calib_;
  std::unique_ptr<nvidia::HistogramCalibrator> hist_calib_;
  std::unique_ptr<nvidia::BlockQuantizer> block_calib_;
};

}  // namespace qgrad::quant
