/// @file
/// NvidiaSettings: the "weight" / "input" settings of the "nvidia" recipe family, a TensorQuantizer
/// with a QuantDescriptor: the descriptor's JSON fields (quant/nvidia/quant_descriptor.h, read
/// and type-checked by it: "num_bits" (int or [E, M]), "name", "fake_quant", "axis",
/// "block_sizes", "amax", "learn_amax", "scale_amax", "calib_method", "unsigned",
/// "narrow_range", "dynamic", "fp8_recipe") plus "num_bins" [2048] for histogram calibration.
/// The descriptor validates the fields together when the quantizer is built; an input with axis
/// 0 (the batch axis) is an error. "amax" (a number or an array of any rank) and "block_sizes"
/// (an object of axes and options) are kept in the JSON form given: it is what the descriptor
/// reads, a rule's "block_sizes" merges key by key over the layer's as it always has, and their
/// typed forms do not keep how the recipe wrote them (1 against 1.0, an absent "type"), which the
/// stored recipe must. Each member is set when the recipe gives the key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "quant/nvidia/num_bits.h"
#include "quant/nvidia/quant_descriptor.h"
#include "quant/recipe/quantizer_factories.h"
#include "quant/recipe/recipe_number.h"
#include "quant/recipe/settings_fields.h"

namespace qgrad::quant {

/// The "weight" / "input" settings of the "nvidia" recipe family (see the file comment);
/// each member is set when the recipe gives its key.
struct NvidiaSettings {
  std::optional<nvidia::NumBits> num_bits;    ///< "num_bits": an int or [E, M]
  std::optional<std::string> name;            ///< "name"
  std::optional<bool> fake_quant;             ///< "fake_quant"
  std::optional<nvidia::QuantAxis> axis;      ///< "axis": an int or a list of ints
  std::optional<nlohmann::json> block_sizes;  ///< "block_sizes", as the recipe wrote it
  std::optional<nlohmann::json> amax;         ///< "amax", as the recipe wrote it
  std::optional<bool> learn_amax;             ///< "learn_amax"
  std::optional<RecipeNumber> scale_amax;     ///< "scale_amax"
  std::optional<std::string> calib_method;    ///< "calib_method"
  std::optional<bool> is_unsigned;            ///< "unsigned"
  std::optional<bool> narrow_range;           ///< "narrow_range"
  std::optional<bool> dynamic;                ///< "dynamic"
  std::optional<std::string> fp8_recipe;      ///< "fp8_recipe"
  std::optional<std::int64_t> num_bins;       ///< "num_bins" [2048], histogram calibration

  /// The recipe keys and the members that hold them, {key, member} (settings_fields.h).
  static auto fields() {
    return std::make_tuple(settings_field("num_bits", &NvidiaSettings::num_bits),
                           settings_field("name", &NvidiaSettings::name),
                           settings_field("fake_quant", &NvidiaSettings::fake_quant),
                           settings_field("axis", &NvidiaSettings::axis),
                           settings_field("block_sizes", &NvidiaSettings::block_sizes),
                           settings_field("amax", &NvidiaSettings::amax),
                           settings_field("learn_amax", &NvidiaSettings::learn_amax),
                           settings_field("scale_amax", &NvidiaSettings::scale_amax),
                           settings_field("calib_method", &NvidiaSettings::calib_method),
                           settings_field("unsigned", &NvidiaSettings::is_unsigned),
                           settings_field("narrow_range", &NvidiaSettings::narrow_range),
                           settings_field("dynamic", &NvidiaSettings::dynamic),
                           settings_field("fp8_recipe", &NvidiaSettings::fp8_recipe),
                           settings_field("num_bins", &NvidiaSettings::num_bins));
  }
  /// `j`, a JSON object of the family's keys for role, read key by key (ValueError naming
  /// `path`.key for an unknown key or a wrong type or value).
  static NvidiaSettings parse(const nlohmann::json& j, QuantRole role, const std::string& path);
  /// The quantizer factory of role these settings describe (the family's defaults for the keys
  /// left out); ValueError naming `path` for keys that do not go together.
  QuantizerFactories factories(QuantRole role, const std::string& path) const;
  /// Same keys given, with equal values.
  bool operator==(const NvidiaSettings& o) const { return settings_equal(*this, o); }
};

}  // namespace qgrad::quant
