// RecipeNumber: the value of a recipe number and the JSON form it was written in.
#include "quant/recipe/recipe_number.h"

namespace qgrad::quant {

RecipeNumber RecipeNumber::from_json(const nlohmann::json& number) {
  RecipeNumber n(0.0);
  // nlohmann keeps non-negative integers unsigned and negative ones signed.
  if (number.is_number_unsigned())
    n.written_ = number.get<std::uint64_t>();
  else if (number.is_number_integer())
    n.written_ = number.get<std::int64_t>();
  else
    n.written_ = number.get<double>();
  return n;
}

double RecipeNumber::value() const {
  return std::visit([](auto v) { return static_cast<double>(v); }, written_);
}

nlohmann::json RecipeNumber::to_json() const {
  return std::visit([](auto v) { return nlohmann::json(v); }, written_);
}

}  // namespace qgrad::quant
