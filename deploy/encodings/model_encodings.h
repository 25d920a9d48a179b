// AIMET encodings of a whole quantization-aware model, keyed by the tensor names of its ONNX
// export (the C++ API behind `qgrad export --encodings`). The model is lowered as
// deploy::build_onnx_model does in its float form (OnnxExportOptions::qdq = false, what AIMET
// exports next to an encodings file); every quantizer met becomes an encoding
// (quantizer_encoding.h) under the name of the float tensor it quantizes: param encodings under
// the weight's name ("0_weight": the float form's initializer, the QDQ form's
// DequantizeLinear output), activation encodings under the layer's input tensor ("input", "2",
// "layer1.0.relu1"). Disabled quantizers are left out. The file is AIMET's 0.6.1 or 1.0.0
// layout (quant/aimet/encodings_json.h) and is written through a temporary file and a rename.
// ValueError naming the layer for a quantizer without an integer grid or a layer the ONNX
// exporter does not know; IOError for an unwritable path (no file left behind).
#pragma once

#include <string>
#include <vector>

#include "deploy/onnx/onnx_export.h"
#include "nn/module.h"
#include "quant/aimet/encodings_json.h"

namespace qgrad::deploy {

struct ModelEncodings {
  std::vector<aimet::NamedEncoding> activations;  // in graph order
  std::vector<aimet::NamedEncoding> params;
};

// `options.qdq` is ignored (the float form is always used); the rest is build_onnx_model's.
ModelEncodings model_encodings(const nn::Module& model,
                               const OnnxExportOptions& options = OnnxExportOptions());

void export_encodings(const nn::Module& model, const std::string& path,
                      aimet::EncodingFileVersion version = aimet::EncodingFileVersion::V1_0_0,
                      const OnnxExportOptions& options = OnnxExportOptions());

}  // namespace qgrad::deploy
