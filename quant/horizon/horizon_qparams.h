/// @file
/// Horizon (horizon_plugin_pytorch) quantization parameters: the symmetric integer dtypes it
/// emulates (qint8 [-128,127], qint16 [-32768,32767], qint4 [-8,7], quint4 [0,15]), its two
/// rounding modes, and its scale rule scale = max(max(-min, max) / ((qmax - qmin) / 2), 2^-23)
/// in float32 (zero point always 0).
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace qgrad::horizon {

/// The integer dtypes Horizon emulates: qint8, qint16, qint4 (signed) and quint4.
enum class QDType { QInt8, QInt16, QInt4, QUInt4 };
/// HalfToEven: rne(x / scale) (default). HalfUp: floor(x / scale + 0.5) (the legacy formula of
/// Horizon's documentation).
enum class RoundMode { HalfToEven, HalfUp };

/// An inclusive integer range.
struct QRange {
  std::int64_t quant_min;  ///< lowest integer
  std::int64_t quant_max;  ///< highest integer
};

/// The range of d: qint8 [-128,127], qint16 [-32768,32767], qint4 [-8,7], quint4 [0,15].
QRange quant_range(QDType d);
/// "qint8", "qint16", "qint4" or "quint4".
const char* qdtype_name(QDType d);

inline constexpr float kMinScale = 1.1920928955078125e-07f;  ///< 2^-23

/// The symmetric scale rule for finite statistics, written once (QGRAD_HD) for the host and the
/// GPU: min_neg = min(min, 0), max_pos = max(max, 0), max(max(-min_neg, max_pos) / half_range,
/// 2^-23), with std::min / std::max's operand order (a -0.0 keeps its sign).
QGRAD_HD_INLINE float symmetric_scale_of(float min_val, float max_val, float half_range) {
  const float min_neg = 0.0f < min_val ? 0.0f : min_val;
  const float max_pos = max_val < 0.0f ? 0.0f : max_val;
  const float neg = -min_neg;
  const float amax = neg < max_pos ? max_pos : neg;
  const float s = amax / half_range;
  return s < kMinScale ? kMinScale : s;
}

/// (qmax - qmin) / 2 of d's range, in float.
float half_range(QDType d);

/// Symmetric scale from observed statistics (symmetric_scale_of). Throws ValueError for NaN or
/// infinite statistics.
float symmetric_scale(float min_val, float max_val, QDType d);

}  // namespace qgrad::horizon
