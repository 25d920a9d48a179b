// `qgrad export`: argument parsing, model reconstruction from the checkpoint (as `qgrad eval`),
// and the ONNX, AIMET encodings and quantizer state outputs, all or none written.
#include "cli/export_command.h"

#include <filesystem>
#include <ostream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "cli/command_options.h"
#include "cli/dataset_factory.h"
#include "cli/qat_setup.h"
#include "cli/stored_config.h"
#include "cli/train_config.h"
#include "cli/training_factory.h"
#include "cli/usage_error.h"
#include "core/error.h"
#include "core/file_io.h"
#include "nn/serialize/checkpoint.h"
#include "quant/modules/lazy_buffer.h"
#include "quant/modules/quantizer_state_file.h"
#ifdef QGRAD_WITH_ONNX
#include "deploy/encodings/model_encodings.h"
#include "deploy/onnx/onnx_export.h"
#endif

namespace qgrad::cli {

namespace {

struct Output {
  std::string path, bytes, line;
};

}  // namespace

void run_export(const ExportOptions& options, std::ostream& out) {
#ifndef QGRAD_WITH_ONNX
  if (!options.onnx.empty() || !options.encodings.empty())
    throw ValueError(
        "export: this qgrad was built without ONNX support (install libonnx-dev and "
        "libprotobuf-dev, e.g. with scripts/install_deps.sh, and configure with -DQGRAD_ONNX=ON)");
#endif
  serialize::Checkpoint ckpt = serialize::load_checkpoint(options.checkpoint);
  TrainConfig config = stored_train_config(ckpt, "export", options.checkpoint);
  std::shared_ptr<nn::UnaryModule> model = build_model(config);
  std::string kind = "float", family;
  if (config.quant) {
    family = quantize_for_training(*model, *config.quant).family;
    kind = "QDQ (" + family + " recipe)";
  }
  quant::load_quant_state_dict(*model, ckpt.model, /*strict=*/true);
  model->eval();
  if (family.empty() && (!options.encodings.empty() || !options.quantizers.empty()))
    throw UsageError("export: " + options.checkpoint +
                     " was trained float (its stored config has no \"quant\" recipe), so it has "
                     "no quantizers for --encodings or --quantizers");

  // Every output in memory first: an unsupported layer or quantizer leaves no file behind.
  std::vector<Output> outputs;
  const std::string source = options.checkpoint + ": " + config.model;
#ifdef QGRAD_WITH_ONNX
  if (!options.onnx.empty()) {
    deploy::OnnxExportOptions o;
    o.qdq = options.onnx_qdq;
    const nn::ImageShape image = data_shape(config.data).image;
    o.input_shape = {image.channels, image.height, image.width};
    if (!o.qdq && !family.empty()) kind = "float (" + family + " recipe, quantizers left out)";
    std::string bytes;
    QGRAD_CHECK(deploy::build_onnx_model(*model, o).SerializeToString(&bytes), ValueError,
                "export: the ONNX model could not be serialised (over protobuf's 2 GB limit?)");
    outputs.push_back({options.onnx, bytes,
                       source + " exported as " + kind + " ONNX (opset " +
                           std::to_string(deploy::kOnnxOpset) + ", input [batch, " +
                           std::to_string(o.input_shape[0]) + ", " +
                           std::to_string(o.input_shape[1]) + ", " +
                           std::to_string(o.input_shape[2]) + "]) to " + options.onnx});
  }
  if (!options.encodings.empty()) {
    const deploy::ModelEncodings e = deploy::model_encodings(*model);
    const aimet::EncodingFileVersion v = options.encodings_version == "0.6.1"
                                             ? aimet::EncodingFileVersion::V0_6_1
                                             : aimet::EncodingFileVersion::V1_0_0;
    outputs.push_back(
        {options.encodings, aimet::encodings_to_json(e.activations, e.params, v).dump(4),
         source + " (" + family + " recipe): " + std::to_string(e.params.size()) + " param and " +
             std::to_string(e.activations.size()) + " activation encodings (AIMET " +
             options.encodings_version + " layout) to " + options.encodings});
  }
#endif
  if (!options.quantizers.empty()) {
    const nlohmann::json q = quant::quantizer_state_json(*model);
    outputs.push_back({options.quantizers, q.dump(1) + "\n",
                       source + " (" + family +
                           " recipe): " + std::to_string(q["quantizers"].size()) +
                           " quantizers to " + options.quantizers});
  }
  // Each file complete under a temporary name first; only when all are written are they renamed
  // into place, so an unwritable output leaves none of them.
  std::vector<std::string> written;
  try {
    for (const Output& o : outputs) {
      write_file_atomic(o.path + ".partial", o.bytes);
      written.push_back(o.path + ".partial");
    }
    for (const Output& o : outputs) {
      std::error_code ec;
      std::filesystem::rename(o.path + ".partial", o.path, ec);
      if (ec) throw IOError("export: cannot write '" + o.path + "': " + ec.message());
    }
  } catch (...) {
    std::error_code ignored;
    for (const std::string& t : written) std::filesystem::remove(t, ignored);
    throw;
  }
  for (const Output& o : outputs) out << o.line << "\n";
  out << std::flush;
}

std::string export_usage() {
  return "usage: qgrad export --checkpoint FILE [--onnx OUT.onnx] [--onnx-form qdq|float]\n"
         "                    [--encodings OUT.encodings] [--encodings-version 1.0.0|0.6.1]\n"
         "                    [--quantizers OUT.json]\n"
         "\n"
         "Writes the model of a checkpoint written by qgrad train (at least one output):\n"
         "  --onnx: ONNX (opset 13, input [batch, C, H, W] named \"input\", [batch, 1, 28, 28]\n"
         "    for MNIST-format data, output \"output\"):\n"
         "    a float model as plain ONNX with batch norm folded into the convolutions, a\n"
         "    quantization-aware model as QDQ ONNX (QuantizeLinear / DequantizeLinear on\n"
         "    quantized activations, int8 / uint8 weights; the torch_ao, nvidia, lsq,\n"
         "    horizon, aimet and pact families, DoReFa weights up to 7 bits), or with\n"
         "    --onnx-form float as its float computation without quantizers (any family;\n"
         "    the model an encodings file goes with).\n"
         "  --encodings: the AIMET encodings of a quantization-aware model's quantizers (aimet,\n"
         "    torch_ao, nvidia, lsq, horizon and pact activations: integer grids of 2^k\n"
         "    levels), keyed by the ONNX tensor names (\"0_weight\", \"input\", ...), in\n"
         "    AIMET's 1.0.0 (default) or 0.6.1 layout.\n"
         "  --quantizers: every quantizer's family, settings and state as qgrad JSON, which\n"
         "    qgrad eval --quantizers applies to the rebuilt model.\n"
         "Everything is computed before anything is written; each file is written to a\n"
         "temporary name and renamed when complete.\n"
         "\n"
         "  --checkpoint FILE          a .safetensors checkpoint (last, best or epoch_N) "
         "(required)\n"
         "  --onnx OUT.onnx            the ONNX file to write\n"
         "  --onnx-form qdq|float      QDQ (default) or float ONNX for a quantization-aware "
         "model\n"
         "  --encodings OUT.encodings  the AIMET encodings file to write\n"
         "  --encodings-version V      1.0.0 (default) or 0.6.1\n"
         "  --quantizers OUT.json      the quantizer state file to write\n"
         "\n"
         "exit status: 0 done, 1 error (a missing checkpoint, a layer or quantizer the export\n"
         "does not support, an unwritable path), 2 bad usage\n";
}

int export_command(const std::vector<std::string>& args, std::ostream& out) {
  ExportOptions o;
  const auto options =
      parse_command_options("export", args,
                            {"--checkpoint", "--onnx", "--onnx-form", "--encodings",
                             "--encodings-version", "--quantizers"});
  if (!options) {
    out << export_usage();
    return 0;
  }
  bool version_given = false, form_given = false;
  for (const auto& [name, value] : *options) {
    if (name == "--checkpoint") o.checkpoint = value;
    if (name == "--onnx") o.onnx = value;
    if (name == "--encodings") o.encodings = value;
    if (name == "--quantizers") o.quantizers = value;
    if (name == "--encodings-version") {
      if (value != "1.0.0" && value != "0.6.1")
        throw UsageError("export: --encodings-version must be 1.0.0 or 0.6.1, got '" + value + "'");
      o.encodings_version = value;
      version_given = true;
    }
    if (name == "--onnx-form") {
      if (value != "qdq" && value != "float")
        throw UsageError("export: --onnx-form must be qdq or float, got '" + value + "'");
      o.onnx_qdq = value == "qdq";
      form_given = true;
    }
  }
  if (o.checkpoint.empty()) throw UsageError("export: --checkpoint FILE is required");
  if (o.onnx.empty() && o.encodings.empty() && o.quantizers.empty())
    throw UsageError(
        "export: nothing to write: give --onnx OUT.onnx, --encodings OUT.encodings and/or "
        "--quantizers OUT.json");
  if (version_given && o.encodings.empty())
    throw UsageError("export: --encodings-version needs --encodings OUT.encodings");
  if (form_given && o.onnx.empty()) throw UsageError("export: --onnx-form needs --onnx OUT.onnx");
  const std::vector<std::string> paths{o.onnx, o.encodings, o.quantizers};
  for (std::size_t i = 0; i < paths.size(); ++i)
    for (std::size_t j = i + 1; j < paths.size(); ++j)
      if (!paths[i].empty() && paths[i] == paths[j])
        throw UsageError("export: two outputs have the same path '" + paths[i] + "'");
  const std::vector<std::string> names{"--onnx", "--encodings", "--quantizers"};
  for (std::size_t i = 0; i < paths.size(); ++i)
    if (!paths[i].empty())
      check_output_file("export", names[i], paths[i], {{"the checkpoint", o.checkpoint}});
  run_export(o, out);
  return 0;
}

}  // namespace qgrad::cli
