// Formatting of tensor values in the printouts of the quantizer modules: a one-element tensor as
// a Python float ("0.0157"), several as a list ("[0.1, 0.2]"), empty as "[]", so extra_repr
// lines read like PyTorch's without its multi-line tensor printouts.
#pragma once

#include <string>

#include "core/tensor.h"

namespace qgrad::quant {

// Python repr of the values (floats as repr(float), integers as ints); lists longer than
// `max_items` are shortened to their first items and "...".
std::string values_repr(const Tensor& t, std::size_t max_items = 8);

}  // namespace qgrad::quant
