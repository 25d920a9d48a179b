// AIMET affine grids, the min/max -> scale/offset mapping and AffineEncoding.
#include "quant/aimet/affine_encoding.h"

#include "core/factory.h"
#include "ops/binary/binary.h"
#include "quant/aimet/affine_quantize.h"

namespace qgrad::aimet {

AffineGrid affine_grid(int bitwidth, bool symmetric) {
  QGRAD_CHECK(bitwidth >= 1 && bitwidth <= 32, ValueError,
              "aimet.affine_grid: bitwidth must lie in [1, 32], got ", bitwidth);
  if (symmetric) {
    const std::int64_t half = std::int64_t{1} << (bitwidth - 1);
    return {-half, half - 1, true};
  }
  return {0, (std::int64_t{1} << bitwidth) - 1, false};
}

Tensor encoding_scale(const Tensor& min, const Tensor& max, int bitwidth) {
  affine_grid(bitwidth, false);
  QGRAD_CHECK(min.defined() && max.defined() && min.shape() == max.shape(), ShapeError,
              "aimet.encoding_scale: min and max must be defined with one shape, got ",
              min.defined() ? min.shape() : Shape{}, " and ",
              max.defined() ? max.shape() : Shape{});
  const double steps = static_cast<double>((std::int64_t{1} << bitwidth) - 1);
  return div(sub(max, min), steps);
}

Tensor encoding_offset(const Tensor& min, const Tensor& scale, int bitwidth, bool symmetric) {
  const AffineGrid g = affine_grid(bitwidth, symmetric);
  if (symmetric) return zeros(min.shape(), TensorOptions().dtype(min.dtype()).device(min.device()));
  Tensor r = ste_round(div(min, scale));
  return g.qmin == 0 ? r : sub(r, static_cast<double>(g.qmin));
}

AffineEncoding::AffineEncoding(Tensor scale, Tensor offset, int bitwidth, bool symmetric)
    : scale_(std::move(scale)),
      offset_(std::move(offset)),
      bitwidth_(bitwidth),
      symmetric_(symmetric),
      grid_(affine_grid(bitwidth, symmetric)) {
  QGRAD_CHECK(scale_.defined() && offset_.defined() && scale_.shape() == offset_.shape(),
              ShapeError, "aimet.AffineEncoding: scale and offset must be defined with one shape");
}

DType AffineEncoding::dtype() const {
  // AIMET's AffineEncoding.dtype decides by the grid, not by signedness: the first of uint8,
  // int8, int16 that holds [qmin, qmax], else int32 (so unsigned 9..15-bit grids are int16).
  const std::int64_t lo = grid_.qmin, hi = grid_.qmax;
  if (lo >= 0 && lo < hi && hi < 256) return kUInt8;
  if (lo >= -128 && lo < hi && hi < 128) return kInt8;
  if (lo >= -32768 && lo < hi && hi < 32768) return kInt16;
  return kInt32;
}

Tensor AffineEncoding::min() const {
  return mul(add(offset_, static_cast<double>(grid_.qmin)), scale_);
}
Tensor AffineEncoding::max() const {
  return mul(add(offset_, static_cast<double>(grid_.qmax)), scale_);
}

Tensor AffineEncoding::quantize(const Tensor& x) const {
  return aimet::quantize(x, scale_, offset_, grid_.qmin, grid_.qmax);
}
Tensor AffineEncoding::dequantize(const Tensor& q) const {
  return aimet::dequantize(q, scale_, offset_);
}

Tensor AffineEncoding::quantize_dequantize(const Tensor& x) const {
  return aimet::quantize_dequantize(x, scale_, offset_, grid_.qmin, grid_.qmax);
}

AffineEncoding AffineEncoding::to(DType dtype) const {
  if (scale_.dtype() == dtype && offset_.dtype() == dtype) return *this;
  return AffineEncoding(scale_.to(dtype), offset_.to(dtype), bitwidth_, symmetric_);
}

}  // namespace qgrad::aimet
