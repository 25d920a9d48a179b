/// @file
/// AIMET v2's affine quantizer modules (aimet_torch.v2.quantization.affine.Quantize and
/// QuantizeDequantize) wrapping aimet::AffineQuantizer: learnable float32 Parameters "min" and
/// "max" of the encoding shape ({} per tensor, {O,1,1,1} per output channel of a conv weight,
/// broadcast against the input from the trailing dims), the bitwidth, symmetric (signed grid
/// [-2^(b-1), 2^(b-1)-1]) or asymmetric (unsigned [0, 2^b-1]), set_range(), and the
/// compute_encodings() scope: while the returned object lives, forward passes gather running
/// min/max statistics (and quantize with each batch's own encoding); closing it (end() or its
/// destructor, unless an exception is unwinding) sets the range from the statistics.
///   AimetQuantize::forward(x)            -> aimet::QuantizedTensor (integers as floats plus the
///                                           encoding; .dequantize(), .quantized_repr())
///   AimetQuantizeDequantize::forward(x)  -> float tensor, differentiable in x (STE with mask)
///                                           and in min / max (range-learning gradients)
/// State dict: "min", "max" and "initialized" (uint8 0-d: whether the range has been set, so a
/// loaded checkpoint quantizes without set_range()).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "nn/unary_module.h"
#include "quant/aimet/affine_quantizer.h"
#include "quant/modules/calibratable.h"
#include "quant/modules/host_flag.h"
#include "quant/synced_statistics.h"

namespace qgrad::quant {

/// The compute_encodings scope of an AIMET quantizer module (movable, not copyable).
class AimetComputeEncodings {
 public:
  /// Opens quantizer's compute_encodings scope; closing it sets initialized_flag when a range
  /// was set. ValueError when a scope is already open.
  AimetComputeEncodings(aimet::AffineQuantizer& quantizer, Tensor initialized_flag);
  /// Takes over other's scope (other no longer closes it).
  AimetComputeEncodings(AimetComputeEncodings&& other) noexcept;
  AimetComputeEncodings(const AimetComputeEncodings&) = delete;
  AimetComputeEncodings& operator=(const AimetComputeEncodings&) = delete;
  AimetComputeEncodings& operator=(AimetComputeEncodings&&) = delete;
  /// Sets the range from the statistics gathered (none: the range is kept).
  void end();
  /// Calls end() unless an exception is unwinding; never throws.
  ~AimetComputeEncodings();

 private:
  std::optional<aimet::AffineQuantizer::ComputeEncodings> inner_;
  aimet::AffineQuantizer* quantizer_;
  Tensor flag_;
};

/// What both modules share; Base is nn::Module (Quantize) or nn::UnaryModule (QDQ).
template <typename Base>
class AimetQuantizerModule : public Base, public Calibratable, public SyncedStatistics {
 public:
  /// ValueError / ShapeError for a bitwidth outside [1, 32] or a bad encoding shape.
  AimetQuantizerModule(const char* name, Shape shape, int bitwidth, bool symmetric);

  /// Sets the range (the "min" / "max" parameters) and marks the module initialized; ValueError
  /// when either is undefined.
  void set_range(const Tensor& min, const Tensor& max);
  void set_range(double min, double max);  ///< set_range with per-tensor scalars
  /// Differentiable in min / max. ValueError before the range is set.
  Tensor get_scale();
  Tensor get_offset();                   ///< the offset of the range (see get_scale())
  aimet::AffineEncoding get_encoding();  ///< the encoding of the range (see get_scale())
  /// Opens a compute_encodings scope (see the file comment).
  AimetComputeEncodings compute_encodings();
  bool is_initialized() const;  ///< whether the range was set ("initialized" buffer)
  /// Inside a compute_encodings() scope (each batch quantized with its own encoding).
  bool computing_encodings() const { return quantizer_->computing_encodings(); }

  /// The learnable "min" parameter (float32, the encoding shape).
  const Tensor& min() const { return min_; }
  /// The learnable "max" parameter (float32, the encoding shape).
  const Tensor& max() const { return max_; }
  /// The encoding shape.
  const Shape& shape() const { return quantizer_->shape(); }
  /// Bits of the integer grid.
  int bitwidth() const { return quantizer_->bitwidth(); }
  /// Whether the grid is signed with offset 0.
  bool symmetric() const { return quantizer_->symmetric(); }
  /// The grid's smallest integer.
  std::int64_t qmin() const { return quantizer_->qmin(); }
  /// The grid's largest integer.
  std::int64_t qmax() const { return quantizer_->qmax(); }

  /// "shape=(), qmin=0, qmax=255, symmetric=False" (AIMET's printout).
  std::string extra_repr() const override;

  /// Opens a compute_encodings scope; closes it (strict: a quantizer that saw no data is a
  /// ValueError, the range is kept either way).
  void start_calibration() override;
  /// Closes the scope: the range from the statistics; with options.strict, ValueError when
  /// none were gathered.
  void finish_calibration(const CalibrationOptions& options) override;
  /// The CPU and a GPU (the affine kernels and the min/max statistics run on both).
  bool runs_on(Device device) const override { return device.is_cpu() || device.is_cuda(); }
  /// The encoding analyzer reduces its statistics over `group` (synchronize_statistics.h).
  void set_process_group(std::shared_ptr<distributed::ProcessGroup> group) override;

 protected:
  /// The state class, with its initialisation brought in line with the "initialized" buffer
  /// (after load_state_dict). ValueError when the range is not set and no scope is open.
  aimet::AffineQuantizer& ready(const char* op);

 private:
  std::unique_ptr<aimet::AffineQuantizer> quantizer_;
  Tensor min_, max_, initialized_;
  HostFlag initialized_on_{Tensor()};  // the buffer as forward() reads it: no host wait on a GPU
  std::optional<AimetComputeEncodings> calibration_;
};

/// @cond
extern template class AimetQuantizerModule<nn::Module>;
extern template class AimetQuantizerModule<nn::UnaryModule>;
/// @endcond

/// AIMET v2's Quantize module: forward() gives the quantized integers with their encoding.
class AimetQuantize : public AimetQuantizerModule<nn::Module> {
 public:
  /// See AimetQuantizerModule's constructor.
  AimetQuantize(Shape shape, int bitwidth, bool symmetric);
  /// x (a CPU floating tensor) quantized with the module's encoding (see the file comment).
  aimet::QuantizedTensor forward(const Tensor& x);
  /// forward(x).
  aimet::QuantizedTensor operator()(const Tensor& x) { return forward(x); }
};

/// AIMET v2's QuantizeDequantize module: forward() gives the represented values,
/// differentiable in x, min and max.
class AimetQuantizeDequantize : public AimetQuantizerModule<nn::UnaryModule> {
 public:
  /// See AimetQuantizerModule's constructor.
  AimetQuantizeDequantize(Shape shape, int bitwidth, bool symmetric);
  /// quantize_dequantize(x).data(), x a CPU floating tensor.
  Tensor forward(const Tensor& x) override;
  /// The same values with their encoding.
  aimet::DequantizedTensor quantize_dequantize(const Tensor& x);
};

}  // namespace qgrad::quant
