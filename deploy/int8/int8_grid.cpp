// Int8Grid from an activation quantizer's 8-bit parameters.
#include "deploy/int8/int8_grid.h"

#include <sstream>

#include "core/error.h"

namespace qgrad::quant {

bool Int8Grid::narrower_than_type() const {
  return quant_min != type_min() || quant_max != type_max();
}

std::string Int8Grid::str() const {
  std::ostringstream os;
  os << "scale " << scale << ", zero point " << zero_point << ", [" << quant_min << ", "
     << quant_max << "]";
  return os.str();
}

Int8Grid Int8Grid::from_params(const quant::QdqParams& p, const std::string& where) {
  QGRAD_CHECK(!p.identity, ValueError, "int8 convert: ", where,
              " is disabled (the layer's input would stay float, which int8 layers cannot take)");
  QGRAD_CHECK(!p.axis && p.scale.size() == 1 && p.zero_point.size() == 1, ValueError,
              "int8 convert: ", where, " is per-channel (", p.scale.size(),
              " scales); int8 activations need one scale and zero point per tensor");
  Int8Grid g;
  g.scale = p.scale[0];
  g.zero_point = p.zero_point[0];
  g.quant_min = p.quant_min;
  g.quant_max = p.quant_max;
  return g;
}

bool operator==(const Int8Grid& a, const Int8Grid& b) {
  return a.scale == b.scale && a.zero_point == b.zero_point && a.quant_min == b.quant_min &&
         a.quant_max == b.quant_max;
}

}  // namespace qgrad::quant
