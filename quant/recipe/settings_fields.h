/// @file
/// The keys of a family's quantizer settings, handled alike for every family: each settings
/// struct holds one std::optional per recipe key (set: the recipe gave the key) and lists them in
/// a static fields() tuple of {key, member}. From that list come the JSON the settings write back
/// (exactly the keys given, in the form given), the merge of a layer rule's override over a
/// layer's settings (the keys the override gives replace; nested objects merge key by key, as
/// they always have), equality, and the conflict test of two equally specific rules (a key both
/// give, with different values). Values are typed: bool, integers, strings, RecipeNumber, and
/// nvidia's NumBits and QuantAxis; nvidia's nested "amax" and "block_sizes" stay in the JSON form
/// the descriptor reads (see nvidia_settings.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "quant/modules/named_recipes.h"
#include "quant/nvidia/quant_descriptor.h"
#include "quant/recipe/recipe_number.h"

namespace qgrad::quant {

/// One recipe key of a settings struct S and the member (an optional T) that holds it.
template <typename S, typename T>
struct SettingsField {
  const char* key;              ///< the recipe key
  std::optional<T> S::*member;  ///< the member that holds its value
};

/// The SettingsField {key, member}, its types deduced.
template <typename S, typename T>
constexpr SettingsField<S, T> settings_field(const char* key, std::optional<T> S::*member) {
  return {key, member};
}

/// A value as the recipe JSON writes it (bool, integer, string, number, JSON, NumBits, QuantAxis).
inline nlohmann::json settings_value_json(bool v) {
  return v;
}
/// An integer value as JSON.
inline nlohmann::json settings_value_json(std::int64_t v) {
  return v;
}
/// A string value as JSON.
inline nlohmann::json settings_value_json(const std::string& v) {
  return v;
}
/// A RecipeNumber in the form it was written.
inline nlohmann::json settings_value_json(const RecipeNumber& v) {
  return v.to_json();
}
/// A JSON value as it is.
inline nlohmann::json settings_value_json(const nlohmann::json& v) {
  return v;
}
/// num_bits as the recipe writes it: an int, or [E, M] for a float format.
inline nlohmann::json settings_value_json(const nvidia::NumBits& v) {
  if (!v.is_float()) return v.bits();
  return nlohmann::json::array({v.format().exponent_bits, v.format().mantissa_bits});
}
/// An axis as the recipe writes it: an int for a single axis, else the list of axes.
inline nlohmann::json settings_value_json(const nvidia::QuantAxis& v) {
  if (v.kind == nvidia::QuantAxis::Kind::Int) return v.axes.at(0);
  return v.axes;
}

/// Merges one key: over's value, when given, replaces base's.
template <typename T>
void merge_settings_value(std::optional<T>& base, const std::optional<T>& over) {
  if (over) base = over;
}
/// Merges one JSON key: objects key by key (merge_recipe_json), any other value replaces.
inline void merge_settings_value(std::optional<nlohmann::json>& base,
                                 const std::optional<nlohmann::json>& over) {
  if (!over) return;
  if (base && base->is_object() && over->is_object())
    merge_recipe_json(*base, *over);
  else
    base = over;
}

/// Every recipe key of S, in fields() order: the keys its parse accepts.
template <typename S>
std::vector<std::string> settings_keys() {
  return std::apply([](const auto&... f) { return std::vector<std::string>{f.key...}; },
                    S::fields());
}

/// The keys given, as the recipe wrote them.
template <typename S>
nlohmann::json settings_to_json(const S& s) {
  nlohmann::json j = nlohmann::json::object();
  std::apply(
      [&](const auto&... f) {
        ((s.*f.member ? void(j[f.key] = settings_value_json(*(s.*f.member))) : void()), ...);
      },
      S::fields());
  return j;
}

/// `over`'s keys replace `base`'s.
template <typename S>
void merge_settings(S& base, const S& over) {
  std::apply([&](const auto&... f) { (merge_settings_value(base.*f.member, over.*f.member), ...); },
             S::fields());
}

/// Whether a and b give the same keys with equal values.
template <typename S>
bool settings_equal(const S& a, const S& b) {
  return std::apply([&](const auto&... f) { return ((a.*f.member == b.*f.member) && ...); },
                    S::fields());
}

/// Whether a key that both give has different values.
template <typename S>
bool settings_conflict(const S& a, const S& b) {
  return std::apply(
      [&](const auto&... f) {
        return ((a.*f.member && b.*f.member && !(*(a.*f.member) == *(b.*f.member))) || ...);
      },
      S::fields());
}

}  // namespace qgrad::quant
