// `qgrad export --checkpoint F [--onnx OUT.onnx [--onnx-form qdq|float]] [--encodings
// OUT.encodings [--encodings-version 1.0.0|0.6.1]] [--quantizers OUT.json]`: rebuilds the model of
// a checkpoint written by `qgrad train` (quantized with its stored recipe for a QAT checkpoint,
// as `qgrad eval` does), loads its weights and writes any of: the model as ONNX (float, or QDQ
// for a QAT model; `--onnx-form float` writes a QAT model's float computation, the model an
// AIMET encodings file goes with) through deploy::export_onnx; the AIMET encodings of its
// quantizers, named after the ONNX tensors (deploy/encodings/model_encodings.h); the qgrad-native
// quantizer state file (quant/modules/quantizer_state_file.h) that `qgrad eval --quantizers`
// reads back. Everything is computed before anything is written, so a model error leaves no
// file; each file is written whole to "<path>.partial" and the files are renamed into place only
// when all were written, so an unwritable output leaves none of them (a rename failing after
// others succeeded, which needs a path to change under us, is the one exception). Without ONNX
// support in the build (QGRAD_ONNX=OFF or libonnx-dev missing) --onnx and --encodings exit 1 saying
// so.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace qgrad::cli {

struct ExportOptions {
  std::string checkpoint;
  std::string onnx;      // output paths; empty: not written
  bool onnx_qdq = true;  // --onnx-form qdq (else float)
  std::string encodings;
  std::string encodings_version = "1.0.0";  // or "0.6.1"
  std::string quantizers;
};

// Exports and prints one line per file written to `out`.
void run_export(const ExportOptions& options, std::ostream& out);

// The command line; returns the exit status. Usage errors throw UsageError.
int export_command(const std::vector<std::string>& args, std::ostream& out);
std::string export_usage();

}  // namespace qgrad::cli
