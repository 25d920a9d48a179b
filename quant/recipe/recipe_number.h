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

/// A real-valued recipe setting that writes back as it was written (see the file comment).
class RecipeNumber {
 public:
  /// A number written as the double value.
  explicit RecipeNumber(double value) : written_(value) {}
  /// `number` must be a JSON number (RecipeFields checks it).
  static RecipeNumber from_json(const nlohmann::json& number);

  double value() const;            ///< the number as a double
  nlohmann::json to_json() const;  ///< the number in the form it was written (10 or 10.0)
  /// Equal values, as JSON compares numbers.
  bool operator==(const RecipeNumber& o) const { return value() == o.value(); }
  /// !(*this == o).
  bool operator!=(const RecipeNumber& o) const { return !(*this == o); }

 private:
  std::variant<double, std::int64_t, std::uint64_t> written_;
};

}  // namespace qgrad::quant
