/// @file
/// TorchAoSettings: the "weight" / "input" settings of the "torch_ao" recipe family, FakeQuantize
/// or, with the fused observer, FusedMovingAvgObsFakeQuantize: "observer"
/// ["moving_average_minmax"] | "minmax" | "histogram" | "fused_moving_average_minmax", "dtype"
/// ["quint8"] | "qint8" | "qint32", "qscheme" ["per_tensor_affine"] | "per_tensor_symmetric" |
/// "per_channel_affine" | "per_channel_symmetric", "quant_min" and "quant_max" (together) [the
/// dtype's range], "reduce_range" [false], "averaging_constant" [0.01], "ch_axis" [0], "eps"
/// [2^-23], "bins" [2048]. Per-channel weights are sized along ch_axis; per-channel inputs along
/// axis 0 (the batch) are an error. Each member is set when the recipe gives the key.
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

/// The "weight" / "input" settings of the "torch_ao" recipe family (see the file comment);
/// each member is set when the recipe gives its key.
struct TorchAoSettings {
  std::optional<std::string> observer;             ///< "observer" ["moving_average_minmax"]
  std::optional<std::string> dtype;                ///< "dtype" ["quint8"]
  std::optional<std::string> qscheme;              ///< "qscheme" ["per_tensor_affine"]
  std::optional<std::int64_t> quant_min;           ///< "quant_min" (with quant_max) [the dtype's]
  std::optional<std::int64_t> quant_max;           ///< "quant_max" (with quant_min) [the dtype's]
  std::optional<bool> reduce_range;                ///< "reduce_range" [false]
  std::optional<RecipeNumber> averaging_constant;  ///< "averaging_constant" [0.01]
  std::optional<std::int64_t> ch_axis;             ///< "ch_axis" [0]
  std::optional<RecipeNumber> eps;                 ///< "eps" [2^-23]
  std::optional<std::int64_t> bins;                ///< "bins" [2048]

  /// The recipe keys and the members that hold them, {key, member} (settings_fields.h).
  static auto fields() {
    return std::make_tuple(
        settings_field("observer", &TorchAoSettings::observer),
        settings_field("dtype", &TorchAoSettings::dtype),
        settings_field("qscheme", &TorchAoSettings::qscheme),
        settings_field("quant_min", &TorchAoSettings::quant_min),
        settings_field("quant_max", &TorchAoSettings::quant_max),
        settings_field("reduce_range", &TorchAoSettings::reduce_range),
        settings_field("averaging_constant", &TorchAoSettings::averaging_constant),
        settings_field("ch_axis", &TorchAoSettings::ch_axis),
        settings_field("eps", &TorchAoSettings::eps),
        settings_field("bins", &TorchAoSettings::bins));
  }
  /// `j`, a JSON object of the family's keys for role, read key by key (ValueError naming
  /// `path`.key for an unknown key or a wrong type or value).
  static TorchAoSettings parse(const nlohmann::json& j, QuantRole role, const std::string& path);
  /// The quantizer factory of role these settings describe (the family's defaults for the keys
  /// left out); ValueError naming `path` for keys that do not go together.
  QuantizerFactories factories(QuantRole role, const std::string& path) const;
  /// Same keys given, with equal values.
  bool operator==(const TorchAoSettings& o) const { return settings_equal(*this, o); }
};

}  // namespace qgrad::quant
