// AIMET encodings JSON writer (0.6.1 and 1.0.0 layouts).
#include "quant/aimet/encodings_json.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/autograd/grad_mode.h"
#include "core/file_io.h"

namespace qgrad::aimet {

namespace {

struct Flat {
  std::vector<double> scale, min, max;
  std::vector<std::int64_t> offset;
};

Flat flatten(const AffineEncoding& e) {
  NoGradGuard no_grad;
  Flat f;
  f.scale = e.scale().to_vector<double>();
  f.min = e.min().to_vector<double>();
  f.max = e.max().to_vector<double>();
  for (double o : e.offset().to_vector<double>()) {
    QGRAD_CHECK(std::isfinite(o) && std::fabs(o) < 9.0e15, ValueError,
                "aimet.encodings_to_json: offset ", o, " is not a finite integer-sized value");
    f.offset.push_back(static_cast<std::int64_t>(std::nearbyint(o)) + e.qmin());
  }
  return f;
}

nlohmann::json legacy_list(const AffineEncoding& e) {
  const Flat f = flatten(e);
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < f.scale.size(); ++i) {
    list.push_back({{"bitwidth", e.bitwidth()},
                    {"dtype", "int"},
                    {"is_symmetric", e.symmetric() ? "True" : "False"},
                    {"max", f.max[i]},
                    {"min", f.min[i]},
                    {"offset", f.offset[i]},
                    {"scale", f.scale[i]}});
  }
  return list;
}

nlohmann::json v1_entry(const NamedEncoding& n) {
  const Flat f = flatten(n.encoding);
  return {{"name", n.name},
          {"enc_type", n.encoding.per_channel() ? "PER_CHANNEL" : "PER_TENSOR"},
          {"dtype", "INT"},
          {"bw", n.encoding.bitwidth()},
          {"is_sym", n.encoding.symmetric()},
          {"scale", f.scale},
          {"offset", f.offset}};
}

}  // namespace

nlohmann::json encodings_to_json(const std::vector<NamedEncoding>& activation_encodings,
                                 const std::vector<NamedEncoding>& param_encodings,
                                 EncodingFileVersion version) {
  nlohmann::json j;
  if (version == EncodingFileVersion::V0_6_1) {
    j["version"] = "0.6.1";
    j["activation_encodings"] = nlohmann::json::object();
    j["param_encodings"] = nlohmann::json::object();
    for (const NamedEncoding& n : activation_encodings)
      j["activation_encodings"][n.name] = legacy_list(n.encoding);
    for (const NamedEncoding& n : param_encodings)
      j["param_encodings"][n.name] = legacy_list(n.encoding);
  } else {
    j["version"] = "1.0.0";
    j["activation_encodings"] = nlohmann::json::array();
    j["param_encodings"] = nlohmann::json::array();
    for (const NamedEncoding& n : activation_encodings)
      j["activation_encodings"].push_back(v1_entry(n));
    for (const NamedEncoding& n : param_encodings) j["param_encodings"].push_back(v1_entry(n));
  }
  return j;
}

void save_encodings(const std::string& path, const std::vector<NamedEncoding>& activation_encodings,
                    const std::vector<NamedEncoding>& param_encodings,
                    EncodingFileVersion version) {
  write_file_atomic(path,
                    encodings_to_json(activation_encodings, param_encodings, version).dump(4));
}

}  // namespace qgrad::aimet
