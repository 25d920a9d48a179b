// `qgrad export`: argument parsing, model reconstruction from the checkpoint (as `qgrad eval`),
// and the ONNX export.
#include "cli/export_command.h"

#include <ostream>

#include "cli/command_options.h"
#include "cli/qat_setup.h"
#include "cli/stored_config.h"
#include "cli/train_config.h"
#include "cli/training_factory.h"
#include "cli/usage_error.h"
#include "core/error.h"
#include "nn/serialize/checkpoint.h"
#include "quant/modules/lazy_buffer.h"
#ifdef QGRAD_WITH_ONNX
#include "deploy/onnx/onnx_export.h"
#endif

namespace qgrad::cli {

void run_export(const ExportOptions& options, std::ostream& out) {
#ifdef QGRAD_WITH_ONNX
  serialize::Checkpoint ckpt = serialize::load_checkpoint(options.checkpoint);
  TrainConfig config = stored_train_config(ckpt, "export", options.checkpoint);
  std::shared_ptr<nn::UnaryModule> model = build_model(config);
  std::string kind = "float";
  if (std::optional<quant::QuantRecipe> recipe = quant_recipe(config))
    kind = "QDQ (" + quantize_for_training(*model, *recipe).family + " recipe)";
  quant::load_quant_state_dict(*model, ckpt.model, /*strict=*/true);
  model->eval();
  deploy::export_onnx(*model, options.onnx);
  out << options.checkpoint << ": " << config.model << " exported as " << kind << " ONNX (opset "
      << deploy::kOnnxOpset << ", input [batch, 1, 28, 28]) to " << options.onnx << "\n"
      << std::flush;
#else
  (void)options;
  (void)out;
  throw ValueError(
      "export: this qgrad was built without ONNX support (install libonnx-dev and "
      "libprotobuf-dev, e.g. with scripts/install_deps.sh, and configure with -DQGRAD_ONNX=ON)");
#endif
}

std::string export_usage() {
  return "usage: qgrad export --checkpoint FILE --onnx OUT.onnx\n"
         "\n"
         "Writes the model of a checkpoint written by qgrad train as ONNX (opset 13, input\n"
         "[batch, 1, 28, 28] named \"input\", output \"output\"): a float model as plain ONNX "
         "with\n"
         "batch norm folded into the convolutions, a quantization-aware model as QDQ ONNX\n"
         "(QuantizeLinear / DequantizeLinear on quantized activations, int8 / uint8 weights).\n"
         "QDQ export supports the torch_ao and nvidia recipe families; others are an error naming\n"
         "the layer. The file is written to a temporary name and renamed when complete.\n"
         "\n"
         "  --checkpoint FILE  a .safetensors checkpoint (last, best or epoch_N) (required)\n"
         "  --onnx OUT.onnx    the ONNX file to write (required)\n"
         "\n"
         "exit status: 0 done, 1 error (a missing checkpoint, a layer or quantizer ONNX export\n"
         "does not support, an unwritable path), 2 bad usage\n";
}

int export_command(const std::vector<std::string>& args, std::ostream& out) {
  ExportOptions o;
  const auto options = parse_command_options("export", args, {"--checkpoint", "--onnx"});
  if (!options) {
    out << export_usage();
    return 0;
  }
  for (const auto& [name, value] : *options) {
    if (name == "--checkpoint") o.checkpoint = value;
    if (name == "--onnx") o.onnx = value;
  }
  if (o.checkpoint.empty()) throw UsageError("export: --checkpoint FILE is required");
  if (o.onnx.empty()) throw UsageError("export: --onnx OUT.onnx is required");
  run_export(o, out);
  return 0;
}

}  // namespace qgrad::cli
