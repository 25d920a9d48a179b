/// @file
/// LsqSettings: the "weight" / "input" settings of the "lsq" recipe family,
/// LearnableFakeQuantize: "num_bits" [8] (2..16), "signed" [weights true, inputs false],
/// "per_channel" [false] (weights only, axis 0), "learn_zero_point" [weights false, inputs true]
/// (true: affine LSQ+, false: symmetric LSQ), "use_grad_scaling" [true], "init" ("lsq" |
/// "minmax" | "observer"; ["minmax"] with a learned zero point, else ["lsq"]),
/// "averaging_constant" [0.01]. Each member is set when the recipe gives the key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "quant/recipe/quantizer_factories.h"
#include "quant/recipe/recipe_number.h"
#include "quant/recipe/settings_fields.h"

namespace qgrad::quant {

struct LsqSettings {
  std::optional<std::int64_t> num_bits;
  std::optional<bool> is_signed;
  std::optional<bool> per_channel;
  std::optional<bool> learn_zero_point;
  std::optional<bool> use_grad_scaling;
  std::optional<std::string> init;
  std::optional<RecipeNumber> averaging_constant;

  static auto fields() {
    return std::make_tuple(settings_field("num_bits", &LsqSettings::num_bits),
                           settings_field("signed", &LsqSettings::is_signed),
                           settings_field("per_channel", &LsqSettings::per_channel),
                           settings_field("learn_zero_point", &LsqSettings::learn_zero_point),
                           settings_field("use_grad_scaling", &LsqSettings::use_grad_scaling),
                           settings_field("init", &LsqSettings::init),
                           settings_field("averaging_constant", &LsqSettings::averaging_constant));
  }
  static LsqSettings parse(const nlohmann::json& j, QuantRole role, const std::string& path);
  QuantizerFactories factories(QuantRole role, const std::string& path) const;
  bool operator==(const LsqSettings& o) const { return settings_equal(*this, o); }
};

}  // namespace qgrad::quant
