// `qgrad import --onnx MODEL.onnx --out WEIGHTS.safetensors`: reads a float CNN exported to ONNX
// (deploy/onnx/onnx_import.h: the supported operators, and the errors naming a node and its
// operator or attribute for the rest) and writes the imported model's weights (parameters and
// BN running statistics, keyed "<node>.weight" as the imported module names them) as a
// safetensors file whose metadata names the ONNX file and the importer. The output is written
// atomically, only after the import succeeded, and may not be the input file. Without ONNX
// support in the build the command exits 1 saying so.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace qgrad::cli {

// The command line; returns the exit status. Usage errors throw UsageError.
int import_command(const std::vector<std::string>& args, std::ostream& out);
std::string import_usage();

}  // namespace qgrad::cli
