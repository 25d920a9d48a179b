// QuantizerSettings: the family table and the dispatch to each family's settings.
#include "quant/recipe/quantizer_settings.h"

#include "core/error.h"

namespace qgrad::quant {

using json = nlohmann::json;

namespace {

struct FamilyInfo {
  QuantFamily family;
  const char* name;
  const char* weight_default;
  const char* input_default;
  std::int64_t calibration_batches;
};

const std::vector<FamilyInfo>& families() {
  static const std::vector<FamilyInfo> f{
      {QuantFamily::NVIDIA, "nvidia", R"({"num_bits": 8, "axis": 0})", R"({"num_bits": 8})", 8},
      // PyTorch 1.13's get_default_qat_qconfig("fbgemm"): default_fused_per_channel_wt_fake_quant
      // and FusedMovingAvgObsFakeQuantize(quint8 [0, 255], reduce_range = True).
      {QuantFamily::TorchAO, "torch_ao",
       R"({"observer": "fused_moving_average_minmax", "dtype": "qint8",
           "qscheme": "per_channel_symmetric", "quant_min": -128, "quant_max": 127})",
       R"({"observer": "fused_moving_average_minmax", "dtype": "quint8",
           "qscheme": "per_tensor_affine", "quant_min": 0, "quant_max": 255,
           "reduce_range": true})",
       0},
      {QuantFamily::LSQ, "lsq", R"({"signed": true, "init": "lsq"})",
       R"({"signed": false, "learn_zero_point": true, "init": "minmax"})", 0},
      {QuantFamily::Horizon, "horizon", R"({"per_channel": true})", "{}", 8},
      {QuantFamily::AIMET, "aimet", R"({"symmetric": true, "per_channel": true})",
       R"({"symmetric": false})", 8},
      {QuantFamily::PACT, "pact", R"({"num_bits": 8})", R"({"num_bits": 8})", 0},
  };
  return f;
}

const FamilyInfo& family_info(QuantFamily fam) {
  return families().at(static_cast<std::size_t>(fam));
}

// One parse per alternative, by index.
template <std::size_t I = 0>
QuantizerSettings parse_as(std::size_t index, const json& j, QuantRole role,
                           const std::string& path) {
  if constexpr (I + 1 < std::variant_size_v<QuantizerSettings>) {
    if (index != I) return parse_as<I + 1>(index, j, role, path);
  }
  return std::variant_alternative_t<I, QuantizerSettings>::parse(j, role, path);
}

}  // namespace

const char* quant_family_name(QuantFamily f) {
  return family_info(f).name;
}

const std::vector<std::string>& quant_family_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const FamilyInfo& f : families()) n.push_back(f.name);
    return n;
  }();
  return names;
}

std::optional<QuantFamily> quant_family_named(const std::string& name) {
  for (const FamilyInfo& f : families())
    if (name == f.name) return f.family;
  return std::nullopt;
}

std::int64_t default_calibration_batches(QuantFamily f) {
  return family_info(f).calibration_batches;
}

QuantFamily settings_family(const QuantizerSettings& s) {
  return static_cast<QuantFamily>(s.index());
}

const QuantizerSettings& default_quantizer_settings(QuantFamily family, QuantRole role) {
  // Read once, through the same parser as any recipe.
  static const std::vector<std::pair<QuantizerSettings, QuantizerSettings>> defaults = [] {
    std::vector<std::pair<QuantizerSettings, QuantizerSettings>> d;
    for (const FamilyInfo& f : families())
      d.emplace_back(parse_quantizer_settings(f.family, json::parse(f.weight_default),
                                              QuantRole::Weight, "weight"),
                     parse_quantizer_settings(f.family, json::parse(f.input_default),
                                              QuantRole::Input, "input"));
    return d;
  }();
  const auto& pair = defaults.at(static_cast<std::size_t>(family));
  return role == QuantRole::Weight ? pair.first : pair.second;
}

QuantizerSettings parse_quantizer_settings(QuantFamily family, const json& j, QuantRole role,
                                           const std::string& path) {
  return parse_as(static_cast<std::size_t>(family), j, role, path);
}

json quantizer_settings_json(const QuantizerSettings& s) {
  return std::visit([](const auto& x) { return settings_to_json(x); }, s);
}

void merge_quantizer_settings(QuantizerSettings& base, const QuantizerSettings& over) {
  std::visit(
      [&](auto& b) {
        using S = std::decay_t<decltype(b)>;
        merge_settings(b, std::get<S>(over));
      },
      base);
}

bool quantizer_settings_conflict(const QuantizerSettings& a, const QuantizerSettings& b) {
  return std::visit(
      [&](const auto& x) {
        using S = std::decay_t<decltype(x)>;
        return settings_conflict(x, std::get<S>(b));
      },
      a);
}

QuantizerFactories quantizer_factories(const QuantizerSettings& s, QuantRole role,
                                       const std::string& path) {
  return std::visit([&](const auto& x) { return x.factories(role, path); }, s);
}

}  // namespace qgrad::quant
