// Int8Grid: the integer grid of one int8 activation tensor, real = (q - zero_point) * scale with q
// in [quant_min, quant_max], stored as uint8 when quant_min >= 0 and as int8 otherwise. Grids
// narrower than their storage type (torch.ao's reduce_range [0, 127], 4-bit grids, pq's narrow
// range) keep their bounds: every int8 layer that writes the grid clips to them, which is what
// makes sub-8-bit activations exact here. Built from the QdqParams of a per-tensor activation
// quantizer (quant/modules/qdq_params.h), so the scale and zero point are the family's own.
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "quant/modules/qdq_params.h"

namespace qgrad::quant {

struct Int8Grid {
  float scale = 1.0f;
  std::int32_t zero_point = 0;
  std::int64_t quant_min = 0;
  std::int64_t quant_max = 255;

  bool is_uint8() const { return quant_min >= 0; }
  DType dtype() const { return is_uint8() ? DType::UInt8 : DType::Int8; }
  // The storage type's range: [0, 255] or [-128, 127].
  std::int64_t type_min() const { return is_uint8() ? 0 : -128; }
  std::int64_t type_max() const { return is_uint8() ? 255 : 127; }
  // The grid is narrower than its storage type, so writers must clip to it.
  bool narrower_than_type() const;
  // "scale 0.0123, zero point 64, [0, 127]"
  std::string str() const;

  // The grid of a per-tensor 8-bit activation quantizer; `where` names it in errors (a
  // per-channel or disabled quantizer is a ValueError: an int8 activation needs one grid).
  static Int8Grid from_params(const quant::QdqParams& p, const std::string& where);
};

bool operator==(const Int8Grid& a, const Int8Grid& b);
inline bool operator!=(const Int8Grid& a, const Int8Grid& b) {
  return !(a == b);
}

}  // namespace qgrad::quant
