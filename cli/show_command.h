// `qgrad show`: a model printed as PyTorch's print(model), from a checkpoint (with its trained
// and calibrated state), from a training config (the model it builds, quantized by its recipe,
// before calibration) or from a zoo name and a named recipe. Each quantizer shows its bits,
// granularity and state through the modules' own extra_repr; a last line counts the parameters
// and the quantizers.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace qgrad::cli {

// The command line; returns the exit status. Usage errors throw UsageError.
int show_command(const std::vector<std::string>& args, std::ostream& out);
std::string show_usage();

}  // namespace qgrad::cli
