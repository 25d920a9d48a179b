// ONNX export of a qgrad model (the C++ API behind `qgrad export`): build_onnx_model() lowers the
// model in inference form (BN folded, dropout dropped) to an opset 13 onnx::ModelProto with the
// weights as initializers, one float input "input" [batch, C, H, W] (batch symbolic) and one
// output "output"; a quantization-aware model becomes QDQ ONNX (see module_lowering.h and
// quant/modules/qdq_params.h for what maps and how), or, with `qdq` off, as its float computation
// (the form AIMET encodings go with). Every model is checked with onnx::checker::check_model
// before it is returned. export_onnx() also writes it to a file, atomically. The model is not
// modified (its training mode is left as it was; the export reads its parameters and buffers).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

#include "deploy/onnx/module_lowering.h"
#include "nn/module.h"

namespace qgrad::deploy {

struct OnnxExportOptions {
  // The input's shape without the batch dimension ({C, H, W}); Fashion-MNIST's by default.
  std::vector<std::int64_t> input_shape{1, 28, 28};
  std::string input_name = "input";
  std::string output_name = "output";
  std::string graph_name = "qgrad";
  // false: quantization-aware layers as their float computation (float weights, no Q/DQ), the
  // ONNX model that goes with an AIMET encodings file (deploy/encodings).
  bool qdq = true;
};

inline constexpr std::int64_t kOnnxOpset = 13;

// ValueError naming the layer for anything the exporter cannot express; onnx's ValidationError
// (from check_model) is rethrown as ValueError.
onnx::ModelProto build_onnx_model(const nn::Module& model,
                                  const OnnxExportOptions& options = OnnxExportOptions());
// The same, also giving the model's quantizers and the ONNX tensors they quantize, in graph order.
onnx::ModelProto build_onnx_model(const nn::Module& model, const OnnxExportOptions& options,
                                  std::vector<QuantizerSite>& sites);

// build_onnx_model, serialised and written to `path` through a temporary file and a rename.
void export_onnx(const nn::Module& model, const std::string& path,
                 const OnnxExportOptions& options = OnnxExportOptions());

}  // namespace qgrad::deploy
