// model_encodings / export_encodings: the quantizer sites of the float ONNX lowering turned into
// named AIMET encodings, and the atomic write of the encodings file.
#include "deploy/encodings/model_encodings.h"

#include <nlohmann/json.hpp>

#include "deploy/encodings/quantizer_encoding.h"
#include "deploy/onnx/atomic_file.h"

namespace qgrad::deploy {

ModelEncodings model_encodings(const nn::Module& model, const OnnxExportOptions& options) {
  OnnxExportOptions float_form = options;
  float_form.qdq = false;
  std::vector<QuantizerSite> sites;
  build_onnx_model(model, float_form, sites);
  ModelEncodings e;
  for (const QuantizerSite& s : sites) {
    std::optional<aimet::AffineEncoding> enc = aimet_encoding_of(*s.quantizer, s.where);
    if (!enc) continue;
    (s.is_param ? e.params : e.activations).push_back({s.tensor, *enc});
  }
  return e;
}

void export_encodings(const nn::Module& model, const std::string& path,
                      aimet::EncodingFileVersion version, const OnnxExportOptions& options) {
  const ModelEncodings e = model_encodings(model, options);
  write_file_atomically(path, aimet::encodings_to_json(e.activations, e.params, version).dump(4));
}

}  // namespace qgrad::deploy
