/// @file
/// AIMET v2 affine encodings: the integer grid of a bitwidth (symmetric => signed
/// [-2^(b-1), 2^(b-1)-1], asymmetric => unsigned [0, 2^b-1]), the differentiable scale and offset
/// derived from a learnable min/max range (scale = (max - min) / (2^b - 1) in float32,
/// offset = 0 when symmetric else ste_round(min / scale) - qmin), and AffineEncoding, the value
/// object a QuantizedTensor carries: scale, offset, bitwidth, signedness, symmetry, the integer
/// dtype of quantized_repr() and the represented range.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace qgrad::aimet {

/// The integer grid of a bitwidth: [qmin, qmax] and whether it is signed (see affine_grid()).
struct AffineGrid {
  std::int64_t qmin;  ///< smallest integer of the grid (-2^(b-1) signed, 0 unsigned)
  std::int64_t qmax;  ///< largest integer of the grid (2^(b-1)-1 signed, 2^b-1 unsigned)
  bool is_signed;     ///< true for the symmetric (signed) grid
};

/// bitwidth in [1, 32] (ValueError otherwise).
AffineGrid affine_grid(int bitwidth, bool symmetric);

/// (max - min) / (2^bitwidth - 1), differentiable in min and max.
Tensor encoding_scale(const Tensor& min, const Tensor& max, int bitwidth);
/// 0 (no gradient) when symmetric, else ste_round(min / scale) - qmin, differentiable in min and
/// scale.
Tensor encoding_offset(const Tensor& min, const Tensor& scale, int bitwidth, bool symmetric);

/// An AIMET affine encoding: scale, offset (minus the zero point), bitwidth and symmetry,
/// which map reals to the integer grid and back (AIMET's AffineEncoding).
class AffineEncoding {
 public:
  /// scale and offset must be defined and of one shape (ShapeError); bitwidth in [1, 32]
  /// (ValueError).
  AffineEncoding(Tensor scale, Tensor offset, int bitwidth, bool symmetric);

  /// The scale (per tensor or of the encoding shape).
  const Tensor& scale() const { return scale_; }
  /// The offset, AIMET's convention (minus the zero point).
  const Tensor& offset() const { return offset_; }
  /// Bits of the integer grid.
  int bitwidth() const { return bitwidth_; }
  /// Symmetric encodings have offset 0 and a signed grid.
  bool symmetric() const { return symmetric_; }
  /// Whether the grid is signed.
  bool is_signed() const { return grid_.is_signed; }
  /// The grid's smallest integer.
  std::int64_t qmin() const { return grid_.qmin; }
  /// The grid's largest integer.
  std::int64_t qmax() const { return grid_.qmax; }
  /// The dtype of quantized_repr(), AIMET's AffineEncoding.dtype: the first of uint8
  /// (0 <= qmin < qmax < 256), int8 (-128 <= qmin < qmax < 128), int16 (-32768 <= qmin < qmax <
  /// 32768) that holds the grid, else int32 (torch has no uint16 / uint32, so the upper half of an
  /// unsigned 32-bit grid does not fit). Unsigned 9..15-bit grids are int16, 16-bit ones int32.
  DType dtype() const;
  /// The represented range: (offset + qmin) * scale and (offset + qmax) * scale.
  Tensor min() const;
  Tensor max() const;  ///< (offset + qmax) * scale, the top of the represented range
  /// "pertensor" (one scale) or "perchannel".
  bool per_channel() const { return scale_.numel() > 1; }

  Tensor quantize(const Tensor& x) const;    ///< aimet::quantize with this encoding
  Tensor dequantize(const Tensor& q) const;  ///< aimet::dequantize with this encoding
  /// aimet::quantize_dequantize with this encoding.
  Tensor quantize_dequantize(const Tensor& x) const;
  /// The same encoding with scale and offset converted (differentiably) to dtype.
  AffineEncoding to(DType dtype) const;

 private:
  Tensor scale_, offset_;
  int bitwidth_;
  bool symmetric_;
  AffineGrid grid_;
};

}  // namespace qgrad::aimet
