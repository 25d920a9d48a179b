/// @file
/// RecipeNumber: a real-valued recipe setting ("alpha", "averaging_constant", "eps", nvidia's
/// "scale_amax") as the recipe wrote it. Quantizers read value(); to_json() writes the number back
/// in the form it was given, 10 as 10 and 10.0 as 10.0, because stored checkpoints and configs
/// hold the recipe's JSON text and it must not change when read and written again. Two numbers
/// are equal when their values are, as JSON compares numbers.
#pragma once

#include <cstdint>
#include <variant>

#include <nlohmann/json.hpp>

namespace qgrad::quant {

class RecipeNumber {
 public:
  explicit RecipeNumber(double value) : written_(value) {}
  /// `number` must be a JSON number (RecipeFields checks it).
  static RecipeNumber from_json(const nlohmann::json& number);

  double value() const;
  nlohmann::json to_json() const;
  bool operator==(const RecipeNumber& o) const { return value() == o.value(); }
  bool operator!=(const RecipeNumber& o) const { return !(*this == o); }

 private:
  std::variant<double, std::int64_t, std::uint64_t> written_;
};

}  // namespace qgrad::quant
