// Formatting of values in module printouts the way Python's repr writes them (0.01, -1.0,
// 1e-05, True), so qgrad's module printout reads exactly like PyTorch's.
#pragma once

#include <string>

namespace qgrad::nn {

// Python's repr(float): shortest round-trip digits, fixed notation for exponents in [-4, 16),
// otherwise scientific with a signed two-digit exponent; integral values keep ".0".
std::string py_float(double v);
// "True" / "False".
std::string py_bool(bool v);

}  // namespace qgrad::nn
