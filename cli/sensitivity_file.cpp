// SensitivityFile: the qgrad.sensitivity/1 checks (through ConfigReader, so every message names
// the key path) and the JSON writer.
#include "cli/sensitivity_file.h"

#include <cmath>
#include <limits>
#include <set>

#include "cli/config_reader.h"
#include "cli/usage_error.h"

namespace qgrad::cli {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void require(const ConfigReader& r, const std::string& key) {
  if (!r.has(key)) r.fail(key, "is required");
}

// A fraction in [0, 1]; null (NaN) only where `null_ok`.
double fraction(ConfigReader& r, const std::string& key, bool null_ok) {
  const nlohmann::json v = r.raw(key).value_or(nullptr);
  if (v.is_null() && null_ok) return kNaN;
  if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 1))
    r.fail(key, std::string("must be a fraction in [0, 1]") + (null_ok ? " or null" : "") +
                    ", got " + ConfigReader::shown(v));
  return v.get<double>();
}

LayerSensitivity layer_from_json(const nlohmann::json& j, const std::string& path) {
  ConfigReader r(j, path);
  require(r, "name");
  if (!j.contains("accuracy")) r.fail("accuracy", "is required (null when unknown)");
  require(r, "sqnr_db");
  LayerSensitivity layer;
  layer.name = r.string("name", "");
  layer.accuracy = fraction(r, "accuracy", /*null_ok=*/true);
  const nlohmann::json sqnr = *r.raw("sqnr_db");
  if (!sqnr.is_object() || sqnr.empty())
    r.fail("sqnr_db",
           "must be an object of SQNRs in dB by quantizer role, e.g. {\"weight\": "
           "31.2}, got " +
               ConfigReader::shown(sqnr));
  for (auto it = sqnr.begin(); it != sqnr.end(); ++it) {
    // Any finite dB value: a quantizer may make things worse than zero dB.
    if (!it->is_null() && !(it->is_number() && std::isfinite(it->get<double>())))
      r.fail("sqnr_db." + it.key(), "must be a number or null, got " + ConfigReader::shown(*it));
    if (it.key().empty()) r.fail("sqnr_db", "has an empty quantizer role name");
    layer.sqnr_db.emplace_back(it.key(), it->is_null() ? kNaN : it->get<double>());
  }
  r.finish();
  return layer;
}

nlohmann::json nullable(double v) {
  return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v);
}

}  // namespace

SensitivityFile sensitivity_from_json(const nlohmann::json& j) {
  ConfigReader r(j, "", "the sensitivity file");
  for (const char* key : {"schema", "model", "recipe", "float_accuracy", "layers"}) require(r, key);
  const std::string schema = r.string("schema", "");
  if (schema != kSensitivitySchema)
    r.fail("schema", std::string("must be \"") + kSensitivitySchema + "\", got \"" + schema + "\"");
  SensitivityFile s;
  s.model = r.string("model", "");
  s.recipe = r.string("recipe", "");
  s.checkpoint = r.string("checkpoint", "");
  s.float_accuracy = fraction(r, "float_accuracy", /*null_ok=*/false);
  s.quantized_accuracy = fraction(r, "quantized_accuracy", /*null_ok=*/true);
  const nlohmann::json layers = *r.raw("layers");
  if (!layers.is_array() || layers.empty())
    r.fail("layers", "must be a non-empty list of layers, got " + ConfigReader::shown(layers));
  std::set<std::string> names;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const std::string path = "layers[" + std::to_string(i) + "]";
    s.layers.push_back(layer_from_json(layers[i], path));
    if (!names.insert(s.layers.back().name).second)
      r.fail(path + ".name", "must be unique, got \"" + s.layers.back().name + "\" twice");
  }
  r.finish();
  return s;
}

nlohmann::json sensitivity_to_json(const SensitivityFile& s) {
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerSensitivity& l : s.layers) {
    nlohmann::json sqnr = nlohmann::json::object();
    for (const auto& [role, db] : l.sqnr_db) sqnr[role] = nullable(db);
    layers.push_back({{"name", l.name}, {"accuracy", nullable(l.accuracy)}, {"sqnr_db", sqnr}});
  }
  nlohmann::json j = {{"schema", kSensitivitySchema}, {"model", s.model}, {"recipe", s.recipe}};
  if (!s.checkpoint.empty()) j["checkpoint"] = s.checkpoint;
  j["float_accuracy"] = s.float_accuracy;
  j["quantized_accuracy"] = nullable(s.quantized_accuracy);
  j["layers"] = layers;
  return j;
}

}  // namespace qgrad::cli
