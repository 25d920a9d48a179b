// Quantized dtype and scheme names, and the observer's quantization range rule.
#include "quant/observer/quant_dtype.h"

#include "core/error.h"

namespace qgrad::ao {

const char* quant_dtype_name(QuantDType d) {
  switch (d) {
    case QuantDType::QInt8:
      return "qint8";
    case QuantDType::QUInt8:
      return "quint8";
    case QuantDType::QInt32:
      return "qint32";
    case QuantDType::QUInt4x2:
      return "quint4x2";
  }
  return "?";
}

const char* qscheme_name(QScheme q) {
  switch (q) {
    case QScheme::PerTensorAffine:
      return "per_tensor_affine";
    case QScheme::PerTensorSymmetric:
      return "per_tensor_symmetric";
    case QScheme::PerChannelAffine:
      return "per_channel_affine";
    case QScheme::PerChannelSymmetric:
      return "per_channel_symmetric";
    case QScheme::PerChannelAffineFloatQParams:
      return "per_channel_affine_float_qparams";
  }
  return "?";
}

bool is_per_channel(QScheme q) {
  return q == QScheme::PerChannelAffine || q == QScheme::PerChannelSymmetric ||
         q == QScheme::PerChannelAffineFloatQParams;
}

bool is_symmetric(QScheme q) {
  return q == QScheme::PerTensorSymmetric || q == QScheme::PerChannelSymmetric;
}

namespace {
// Python's floor division.
std::int64_t floor_div2(std::int64_t v) {
  return v >= 0 ? v / 2 : -((-v + 1) / 2);
}
}  // namespace

QuantRange calculate_qmin_qmax(std::optional<std::int64_t> quant_min,
                               std::optional<std::int64_t> quant_max, QuantDType dtype,
                               bool reduce_range) {
  const char* op = "calculate_qmin_qmax";
  QGRAD_CHECK(quant_min.has_value() == quant_max.has_value(), ValueError, op,
              ": quant_min and quant_max must be given together");
  if (quant_min) {
    const std::int64_t lo = *quant_min, hi = *quant_max;
    QGRAD_CHECK(lo <= 0 && 0 <= hi, ValueError, op, ": the user range [", lo, ", ", hi,
                "] must include 0");
    QGRAD_CHECK(lo < hi, ValueError, op, ": quant_min (", lo, ") must be < quant_max (", hi, ")");
    const std::int64_t len = hi - lo + 1;
    if (dtype == QuantDType::QInt8 || dtype == QuantDType::QUInt8)
      QGRAD_CHECK(len <= 256, ValueError, op, ": the range [", lo, ", ", hi, "] of ", len,
                  " values exceeds the 256 values of ", quant_dtype_name(dtype));
    if (dtype == QuantDType::QInt32)
      QGRAD_CHECK(len <= (std::int64_t{1} << 31), ValueError, op, ": the range [", lo, ", ", hi,
                  "] exceeds 2^31 values");
    if (dtype == QuantDType::QUInt4x2)
      QGRAD_CHECK(len <= 16, ValueError, op, ": the range [", lo, ", ", hi,
                  "] exceeds the 16 values of quint4x2");
    if (reduce_range) return {floor_div2(lo), floor_div2(hi)};
    return {lo, hi};
  }
  switch (dtype) {
    case QuantDType::QInt8:
      return reduce_range ? QuantRange{-64, 63} : QuantRange{-128, 127};
    case QuantDType::QUInt8:
      return reduce_range ? QuantRange{0, 127} : QuantRange{0, 255};
    case QuantDType::QInt32:
      return {-(std::int64_t{1} << 31), (std::int64_t{1} << 31) - 1};
    case QuantDType::QUInt4x2:
      return {0, 15};
  }
  return {};
}

}  // namespace qgrad::ao
