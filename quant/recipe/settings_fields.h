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

#include <nlohmann/json.hpp>

#include "quant/modules/named_recipes.h"
#include "quant/nvidia/quant_descriptor.h"
#include "quant/recipe/recipe_number.h"

namespace qgrad::quant {

template <typename S, typename T>
struct SettingsField {
  const char* key;
  std::optional<T> S::*member;
};

template <typename S, typename T>
constexpr SettingsField<S, T> settings_field(const char* key, std::optional<T> S::*member) {
  return {key, member};
}

inline nlohmann::json settings_value_json(bool v) {
  return v;
}
inline nlohmann::json settings_value_json(std::int64_t v) {
  return v;
}
inline nlohmann::json settings_value_json(const std::string& v) {
  return v;
}
inline nlohmann::json settings_value_json(const RecipeNumber& v) {
  return v.to_json();
}
inline nlohmann::json settings_value_json(const nlohmann::json& v) {
  return v;
}
inline nlohmann::json settings_value_json(const nvidia::NumBits& v) {
  if (!v.is_float()) return v.bits();
  return nlohmann::json::array({v.format().exponent_bits, v.format().mantissa_bits});
}
inline nlohmann::json settings_value_json(const nvidia::QuantAxis& v) {
  if (v.kind == nvidia::QuantAxis::Kind::Int) return v.axes.at(0);
  return v.axes;
}

template <typename T>
void merge_settings_value(std::optional<T>& base, const std::optional<T>& over) {
  if (over) base = over;
}
inline void merge_settings_value(std::optional<nlohmann::json>& base,
                                 const std::optional<nlohmann::json>& over) {
  if (!over) return;
  if (base && base->is_object() && over->is_object())
    merge_recipe_json(*base, *over);
  else
    base = over;
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
