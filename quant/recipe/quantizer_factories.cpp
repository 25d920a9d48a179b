// Role names and the axis check of the quantizer factories.
#include "quant/recipe/quantizer_factories.h"

#include "quant/recipe/recipe_fields.h"

namespace qgrad::quant {

const char* quant_role_name(QuantRole role) {
  return role == QuantRole::Weight ? "weight" : "input";
}

std::int64_t weight_axis(std::int64_t a, std::size_t rank, const std::string& what) {
  const auto r = static_cast<std::int64_t>(rank);
  if (a < -r || a >= r)
    recipe_error(what + " " + std::to_string(a) + " is out of range for a weight of rank " +
                 std::to_string(r));
  return a < 0 ? a + r : a;
}

}  // namespace qgrad::quant
