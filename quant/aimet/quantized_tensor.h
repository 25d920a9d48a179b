/// @file
/// AIMET v2's QuantizedTensor and DequantizedTensor as value classes: a float tensor plus the
/// AffineEncoding that maps it between the integer grid and real values.
///   QuantizedTensor:   integer values held as floats; dequantize() -> DequantizedTensor,
///                      quantized_repr() -> the integers in encoding.dtype() (uint8 / int8 /
///                      int16 / int32, as AIMET).
///   DequantizedTensor: represented real values; quantize() recovers the integers exactly (it is
///                      idempotent), quantized_repr() = quantize().quantized_repr().
/// Both conversions are differentiable (aimet::quantize / aimet::dequantize).
#pragma once

#include "core/tensor.h"
#include "quant/aimet/affine_encoding.h"

namespace qgrad::aimet {

class DequantizedTensor;

class QuantizedTensor {
 public:
  QuantizedTensor(Tensor data, AffineEncoding encoding);
  const Tensor& data() const { return data_; }
  const AffineEncoding& encoding() const { return encoding_; }
  DequantizedTensor dequantize() const;
  /// Throws ValueError when a value is not an integer of the encoding's range (NaN included) or
  /// does not fit encoding.dtype() (values above 2^31 - 1 of an unsigned 32-bit grid, where
  /// AIMET's int32 conversion would wrap).
  Tensor quantized_repr() const;

 private:
  Tensor data_;
  AffineEncoding encoding_;
};

class DequantizedTensor {
 public:
  DequantizedTensor(Tensor data, AffineEncoding encoding);
  const Tensor& data() const { return data_; }
  const AffineEncoding& encoding() const { return encoding_; }
  QuantizedTensor quantize() const;
  Tensor quantized_repr() const;

 private:
  Tensor data_;
  AffineEncoding encoding_;
};

}  // namespace qgrad::aimet
