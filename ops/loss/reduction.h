/// @file
/// Reduction: how a loss combines its per-element values ("none", "mean" or "sum", the
/// strings PyTorch's losses take), and the parser that turns a string into it.
#pragma once

#include <string>

namespace qgrad {

/// How a loss reduces its per-sample values: none, mean or sum.
enum class Reduction { None, Mean, Sum };

/// Parses "none" / "mean" / "sum"; anything else is a ValueError naming `op`.
Reduction parse_reduction(const std::string& reduction, const char* op);
/// "none", "mean" or "sum".
const char* reduction_name(Reduction r);

}  // namespace qgrad
