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

class AffineQuantizer {
 public:
  class ComputeEncodings {
   public:
    explicit ComputeEncodings(AffineQuantizer& q);
    ComputeEncodings(ComputeEncodings&& o) noexcept;
    ComputeEncodings(const ComputeEncodings&) = delete;
    ComputeEncodings& operator=(const ComputeEncodings&) = delete;
    ComputeEncodings& operator=(ComputeEncodings&&) = delete;
    /// Leaves calibration and sets the range from the gathered statistics (none: range kept).
    void end();
    ~ComputeEncodings();

   private:
    AffineQuantizer* q_;
    int uncaught_;
  };

  /// shape: the encoding shape ({} per tensor, {O,1,1,1} per output channel of a conv weight).
  AffineQuantizer(Shape shape, int bitwidth, bool symmetric);

  const Shape& shape() const { return shape_; }
  int bitwidth() const { return bitwidth_; }
  bool symmetric() const { return symmetric_; }
  std::int64_t qmin() const { return grid_.qmin; }
  std::int64_t qmax() const { return grid_.qmax; }
  bool is_initialized() const { return initialized_; }

  /// The learnable parameters (float32, requires_grad, the encoding shape).
  Tensor& min() { return min_; }
  Tensor& max() { return max_; }

  void set_range(const Tensor& min, const Tensor& max);
  void set_range(double min, double max);

  /// Differentiable in min / max. Throw ValueError before the range is set.
  Tensor get_scale() const;
  Tensor get_offset() const;
  AffineEncoding get_encoding() const;

  QuantizedTensor quantize(const Tensor& x);
  DequantizedTensor quantize_dequantize(const Tensor& x);

  ComputeEncodings compute_encodings() { return ComputeEncodings(*this); }
  MinMaxEncodingAnalyzer& encoding_analyzer() { return analyzer_; }
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
