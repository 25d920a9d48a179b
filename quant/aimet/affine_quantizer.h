/// @file
/// AIMET v2's min/max affine quantizer (Q.affine.Quantize / Q.affine.QuantizeDequantize) as a
/// plain state class: learnable float32 min / max parameters of the encoding shape, the scale and
/// offset derived from them (differentiable, so min and max learn through the range-learning
/// gradients), quantize() -> QuantizedTensor, quantize_dequantize() -> DequantizedTensor, and the
/// compute_encodings() scope: while a ComputeEncodings object is open, forward passes gather
/// running min/max statistics and quantize with the batch's own encoding; closing it (end() or
/// the destructor, unless an exception is unwinding) sets the range from the statistics.
///   AffineQuantizer q({}, 8, /*symmetric=*/false);
///   q.set_range(-10, 41);
///   q.quantize_dequantize(x).quantize().quantized_repr();   // uint8
#pragma once

#include <exception>

#include "core/tensor.h"
#include "quant/aimet/affine_encoding.h"
#include "quant/aimet/minmax_encoding_analyzer.h"
#include "quant/aimet/quantized_tensor.h"

namespace qgrad::aimet {

/// AIMET v2's min/max affine quantizer: learnable min / max, the encoding derived from them,
/// quantize / quantize_dequantize and the compute_encodings() calibration scope (see the file
/// comment).
class AffineQuantizer {
 public:
  /// The calibration scope that compute_encodings() opens: while it lives, forward passes gather
  /// min/max statistics; end() or the destructor sets the range from them.
  class ComputeEncodings {
   public:
    /// Opens calibration on q; ValueError when q's compute_encodings is already open.
    explicit ComputeEncodings(AffineQuantizer& q);
    /// Takes over o's scope (o no longer closes it).
    ComputeEncodings(ComputeEncodings&& o) noexcept;
    ComputeEncodings(const ComputeEncodings&) = delete;
    ComputeEncodings& operator=(const ComputeEncodings&) = delete;
    ComputeEncodings& operator=(ComputeEncodings&&) = delete;
    /// Leaves calibration and sets the range from the gathered statistics (none: range kept).
    void end();
    /// Calls end() unless an exception is unwinding (then calibration ends with the range
    /// unchanged); never throws.
    ~ComputeEncodings();

   private:
    AffineQuantizer* q_;
    int uncaught_;
  };

  /// shape: the encoding shape ({} per tensor, {O,1,1,1} per output channel of a conv weight).
  AffineQuantizer(Shape shape, int bitwidth, bool symmetric);

  /// The encoding shape.
  const Shape& shape() const { return shape_; }
  /// Bits of the integer grid.
  int bitwidth() const { return bitwidth_; }
  /// Whether the encoding is symmetric (signed grid, offset 0).
  bool symmetric() const { return symmetric_; }
  /// The grid's smallest integer.
  std::int64_t qmin() const { return grid_.qmin; }
  /// The grid's largest integer.
  std::int64_t qmax() const { return grid_.qmax; }
  /// Whether the range was set (set_range or a closed compute_encodings scope).
  bool is_initialized() const { return initialized_; }

  /// The learnable parameters (float32, requires_grad, the encoding shape).
  Tensor& min() { return min_; }
  /// The learnable max (see min()).
  Tensor& max() { return max_; }

  /// Sets min and max (copied into the parameters, float32, the encoding shape) and marks the
  /// quantizer initialized; ValueError when either is undefined.
  void set_range(const Tensor& min, const Tensor& max);
  /// set_range with per-tensor scalars, broadcast to the encoding shape.
  void set_range(double min, double max);

  /// Differentiable in min / max. Throw ValueError before the range is set.
  Tensor get_scale() const;
  Tensor get_offset() const;            ///< the offset of the range (see encoding_offset)
  AffineEncoding get_encoding() const;  ///< the encoding of the current range

  /// x (floating, else DTypeError) quantized to the grid, in x's dtype. Outside calibration the
  /// learnable range is used (ValueError before it is set); inside, the statistics are updated and
  /// the batch's own encoding is used.
  QuantizedTensor quantize(const Tensor& x);
  /// x quantized and dequantized (DequantizedTensor), as quantize().
  DequantizedTensor quantize_dequantize(const Tensor& x);

  /// Opens calibration (see ComputeEncodings); ValueError when one is already open.
  ComputeEncodings compute_encodings() { return ComputeEncodings(*this); }
  /// The statistics gathered during calibration.
  MinMaxEncodingAnalyzer& encoding_analyzer() { return analyzer_; }
  /// Whether a ComputeEncodings scope is open.
  bool computing_encodings() const { return calibrating_; }

 private:
  AffineEncoding encoding_for(const Tensor& x);

  Shape shape_;
  int bitwidth_;
  bool symmetric_;
  AffineGrid grid_;
  Tensor min_, max_;
  bool initialized_ = false;
  bool calibrating_ = false;
  MinMaxEncodingAnalyzer analyzer_;
};

}  // namespace qgrad::aimet
