// `qgrad export --checkpoint F --onnx OUT.onnx`: rebuilds the model of a checkpoint written by
// `qgrad train` (quantized with its stored recipe for a QAT checkpoint, as `qgrad eval` does),
// loads its weights and writes it as ONNX (float, or QDQ for a QAT model) through
// deploy::export_onnx (written to a temporary name, then renamed). Without ONNX support in the
// build (QGRAD_ONNX=OFF or libonnx-dev missing) the command exits 1 saying so.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace qgrad::cli {

struct ExportOptions {
  std::string checkpoint;
  std::string onnx;  // output path
};

// Exports and prints one line about it to `out`.
void run_export(const ExportOptions& options, std::ostream& out);

// The command line; returns the exit status. Usage errors throw UsageError.
int export_command(const std::vector<std::string>& args, std::ostream& out);
std::string export_usage();

}  // namespace qgrad::cli
