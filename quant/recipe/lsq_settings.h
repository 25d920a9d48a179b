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

/// The "weight" / "input" settings of the "lsq" recipe family (see the file comment);
/// each member is set when the recipe gives its key.
struct LsqSettings {
  std::optional<std::int64_t> num_bits;  ///< "num_bits" [8], 2..16
  std::optional<bool> is_signed;         ///< "signed" [weights true, inputs false]
  std::optional<bool> per_channel;       ///< "per_channel" [false], weights only
  std::optional<bool> learn_zero_point;  ///< "learn_zero_point" [weights false, inputs true]
  std::optional<bool> use_grad_scaling;  ///< "use_grad_scaling" [true]
  std::optional<std::string> init;       ///< "init": "lsq" | "minmax" | "observer"
  std::optional<RecipeNumber> averaging_constant;  ///< "averaging_constant" [0.01]

  /// The recipe keys and the members that hold them, {key, member} (settings_fields.h).
  static auto fields() {
    return std::make_tuple(settings_field("num_bits", &LsqSettings::num_bits),
                           settings_field("signed", &LsqSettings::is_signed),
                           settings_field("per_channel", &LsqSettings::per_channel),
                           settings_field("learn_zero_point", &LsqSettings::learn_zero_point),
                           settings_field("use_grad_scaling", &LsqSettings::use_grad_scaling),
                           settings_field("init", &LsqSettings::init),
                           settings_field("averaging_constant", &LsqSettings::averaging_constant));
  }
  /// `j`, a JSON object of the family's keys for role, read key by key (ValueError naming
  /// `path`.key for an unknown key or a wrong type or value).
  static LsqSettings parse(const nlohmann::json& j, QuantRole role, const std::string& path);
  /// The quantizer factory of role these settings describe (the family's defaults for the keys
  /// left out); ValueError naming `path` for keys that do not go together.
  QuantizerFactories factories(QuantRole role, const std::string& path) const;
  /// Same keys given, with equal values.
  bool operator==(const LsqSettings& o) const { return settings_equal(*this, o); }
};

}  // namespace qgrad::quant
