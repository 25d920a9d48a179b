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

struct TorchAoSettings {
  std::optional<std::string> observer;
  std::optional<std::string> dtype;
  std::optional<std::string> qscheme;
  std::optional<std::int64_t> quant_min;
  std::optional<std::int64_t> quant_max;
  std::optional<bool> reduce_range;
  std::optional<RecipeNumber> averaging_constant;
  std::optional<std::int64_t> ch_axis;
  std::optional<RecipeNumber> eps;
  std::optional<std::int64_t> bins;

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
  static TorchAoSettings parse(const nlohmann::json& j, QuantRole role, const std::string& path);
  QuantizerFactories factories(QuantRole role, const std::string& path) const;
  bool operator==(const TorchAoSettings& o) const { return settings_equal(*this, o); }
};

}  // namespace qgrad::quant
