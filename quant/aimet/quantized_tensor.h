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

/// Integer grid values held as floats, with their encoding (AIMET's QuantizedTensor).
class QuantizedTensor {
 public:
  /// data must be a defined floating tensor (DTypeError).
  QuantizedTensor(Tensor data, AffineEncoding encoding);
  /// The integer values (floating dtype).
  const Tensor& data() const { return data_; }
  /// The encoding the values are on.
  const AffineEncoding& encoding() const { return encoding_; }
  /// The represented reals, (data + offset) * scale (differentiable).
  DequantizedTensor dequantize() const;
  /// Throws ValueError when a value is not an integer of the encoding's range (NaN included) or
  /// does not fit encoding.dtype() (values above 2^31 - 1 of an unsigned 32-bit grid, where
  /// AIMET's int32 conversion would wrap).
  Tensor quantized_repr() const;

 private:
  Tensor data_;
  AffineEncoding encoding_;
};

/// Represented real values with the encoding they lie on (AIMET's DequantizedTensor).
class DequantizedTensor {
 public:
  /// data must be a defined floating tensor (DTypeError).
  DequantizedTensor(Tensor data, AffineEncoding encoding);
  /// The represented real values.
  const Tensor& data() const { return data_; }
  /// The encoding the values lie on.
  const AffineEncoding& encoding() const { return encoding_; }
  /// The integers back (exact: quantize is idempotent; differentiable).
  QuantizedTensor quantize() const;
  /// Quantize().quantized_repr() (ValueError as QuantizedTensor's).
  Tensor quantized_repr() const;

 private:
  Tensor data_;
  AffineEncoding encoding_;
};

}  // namespace qgrad::aimet
