/// @file
/// QuantizerSettings: the typed settings of one quantizer role ("weight" or "input") of a QAT
/// recipe, one struct per family (nvidia_settings.h, torch_ao_settings.h, lsq_settings.h,
/// horizon_settings.h, aimet_settings.h, pact_settings.h) held in a variant whose alternative is
/// the recipe's family. Settings hold the keys the recipe gave (a layer rule's override holds
/// only its own); what a key left out means is the family's default, applied when the quantizers
/// are built. The functions below dispatch on the family: reading from the JSON edge, writing
/// back, merging an override, the conflict test of equally specific rules, and building the
/// quantizer factories (the keys' combinations are checked there). The table of families, their
/// names, default settings per role and default calibration batches, is here too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "quant/recipe/aimet_settings.h"
#include "quant/recipe/horizon_settings.h"
#include "quant/recipe/lsq_settings.h"
#include "quant/recipe/nvidia_settings.h"
#include "quant/recipe/pact_settings.h"
#include "quant/recipe/quantizer_factories.h"
#include "quant/recipe/torch_ao_settings.h"

namespace qgrad::quant {

/// In the order of QuantizerSettings' alternatives.
enum class QuantFamily { NVIDIA, TorchAO, LSQ, Horizon, AIMET, PACT };
/// "nvidia", "torch_ao", "lsq", "horizon", "aimet", "pact"
const char* quant_family_name(QuantFamily f);
/// Every family's name, in the enum's order.
const std::vector<std::string>& quant_family_names();
/// The family called `name`; nullopt for another name.
std::optional<QuantFamily> quant_family_named(const std::string& name);
/// Calibration batches a family's recipe runs unless it says otherwise.
std::int64_t default_calibration_batches(QuantFamily f);

/// The settings of one role, the alternative of the recipe's family (see the file comment).
using QuantizerSettings = std::variant<NvidiaSettings, TorchAoSettings, LsqSettings,
                                       HorizonSettings, AimetSettings, PactSettings>;

QuantFamily settings_family(const QuantizerSettings& s);  ///< the family of s's alternative
/// The settings `family` uses for `role` when the recipe does not give them.
const QuantizerSettings& default_quantizer_settings(QuantFamily family, QuantRole role);

/// `j`, a JSON object of the family's keys, checked key by key (ValueError naming `path`.key).
QuantizerSettings parse_quantizer_settings(QuantFamily family, const nlohmann::json& j,
                                           QuantRole role, const std::string& path);
/// The keys given, as given.
nlohmann::json quantizer_settings_json(const QuantizerSettings& s);
/// `over`'s keys replace `base`'s (both of one family).
void merge_quantizer_settings(QuantizerSettings& base, const QuantizerSettings& over);
/// Whether a key both give has different values (both of one family).
bool quantizer_settings_conflict(const QuantizerSettings& a, const QuantizerSettings& b);
/// The quantizers the settings describe; ValueError naming `path` for keys that do not go
/// together (or that the quantizers reject when built).
QuantizerFactories quantizer_factories(const QuantizerSettings& s, QuantRole role,
                                       const std::string& path);

}  // namespace qgrad::quant
