// `qgrad import`: argument parsing, the ONNX import and the weights file.
#include "cli/import_command.h"

#include <map>
#include <ostream>

#include "cli/command_options.h"
#include "cli/usage_error.h"
#include "core/error.h"
#include "core/file_io.h"
#include "nn/serialize/safetensors.h"
#ifdef QGRAD_WITH_ONNX
#include "deploy/onnx/onnx_import.h"
#endif

namespace qgrad::cli {

std::string import_usage() {
  return "usage: qgrad import --onnx MODEL.onnx --out WEIGHTS.safetensors\n"
         "\n"
         "Imports a float CNN exported to ONNX (torch.onnx.export; default-domain opsets up\n"
         "to 17) as a qgrad model and writes its weights. Supported operators: Conv,\n"
         "BatchNormalization (kept as BatchNorm2d with its running statistics), Relu, Clip\n"
         "(ReLU6 / Hardtanh), Add of two values (a residual add, quantized by quantize_model),\n"
         "MaxPool, AveragePool (also after a zero Pad), GlobalAveragePool, Flatten (axis 1),\n"
         "Reshape to [N, -1], Gemm, MatMul (+ Add of a bias), Identity, Dropout and Constant.\n"
         "Any other operator, or an attribute the import cannot honour (asymmetric pads,\n"
         "ceil_mode, auto_pad, ...), is an "
         "error naming the node and the operator or attribute.\n"
         "\n"
         "  --onnx MODEL.onnx           the ONNX file to import (required)\n"
         "  --out WEIGHTS.safetensors   the weights to write: every parameter and BN\n"
         "                              statistic as \"<node>.<name>\", with the node names\n"
         "                              sanitized to letters, digits and '_' (required)\n"
         "\n"
         "The weights go with the same ONNX file afterwards: qgrad ptq / sensitivity /\n"
         "autoquant --checkpoint WEIGHTS.safetensors --model MODEL.onnx, or a train config\n"
         "with \"model\": {\"onnx\": \"MODEL.onnx\"} (which imports the file itself).\n"
         "\n"
         "exit status: 0 done, 1 error (a missing or malformed file, an unsupported operator\n"
         "or attribute, an unwritable path), 2 bad usage\n";
}

int import_command(const std::vector<std::string>& args, std::ostream& out) {
  const auto options = parse_command_options("import", args, {"--onnx", "--out"});
  if (!options) {
    out << import_usage();
    return 0;
  }
  std::string onnx, weights;
  for (const auto& [name, value] : *options) {
    if (name == "--onnx") onnx = value;
    if (name == "--out") weights = value;
  }
  if (onnx.empty()) throw UsageError("import: --onnx MODEL.onnx is required");
  if (weights.empty()) throw UsageError("import: --out WEIGHTS.safetensors is required");
  check_output_file("import", "--out", weights, {{"the ONNX file", onnx}});
#ifdef QGRAD_WITH_ONNX
  auto model = deploy::import_onnx(onnx);
  const TensorDict state = model->state_dict();
  const std::map<std::string, std::string> metadata{{"format", "qgrad-onnx-import"},
                                                    {"onnx", onnx}};
  write_file_atomic(weights, serialize::serialize_safetensors(state, metadata));
  out << onnx << ": " << model->named_children().size() << " layers, " << model->num_parameters()
      << " parameters; " << state.size() << " tensors written to " << weights << "\n"
      << std::flush;
  return 0;
#else
  throw ValueError(
      "import: this qgrad was built without ONNX support (install libonnx-dev and "
      "libprotobuf-dev, e.g. with scripts/install_deps.sh, and configure with -DQGRAD_ONNX=ON)");
#endif
}

}  // namespace qgrad::cli
