// Horizon dtype ranges and the symmetric scale rule.
#include "quant/horizon/horizon_qparams.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace qgrad::horizon {

QRange quant_range(QDType d) {
  switch (d) {
    case QDType::QInt8:
      return {-128, 127};
    case QDType::QInt16:
      return {-32768, 32767};
    case QDType::QInt4:
      return {-8, 7};
    case QDType::QUInt4:
      return {0, 15};
  }
  return {-128, 127};
}

const char* qdtype_name(QDType d) {
  switch (d) {
    case QDType::QInt8:
      return "qint8";
    case QDType::QInt16:
      return "qint16";
    case QDType::QInt4:
      return "qint4";
    case QDType::QUInt4:
      return "quint4";
  }
  return "?";
}

float symmetric_scale(float min_val, float max_val, QDType d) {
  QGRAD_CHECK(std::isfinite(min_val) && std::isfinite(max_val), ValueError,
              "horizon symmetric_scale: statistics must be finite, got min ", min_val, " max ",
              max_val);
  return symmetric_scale_of(min_val, max_val, half_range(d));
}

float half_range(QDType d) {
  const QRange r = quant_range(d);
  return static_cast<float>(static_cast<double>(r.quant_max - r.quant_min) / 2.0);
}

}  // namespace qgrad::horizon
