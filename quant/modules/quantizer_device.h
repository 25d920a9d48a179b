// The device the quantizers run on: the CPU only in this version. The quantizer kernels have no
// CUDA twins yet, and several observers and calibrators read their statistics on the host, so a
// GPU tensor reaching a quantizer module is stopped here with a DeviceError that names the module,
// instead of failing somewhere below it.
#pragma once

#include <string>

#include "core/tensor.h"

namespace qgrad::quant {

// Throws DeviceError naming `module` unless `x` is undefined or on the CPU.
void require_cpu_quantizer_input(const std::string& module, const Tensor& x);

}  // namespace qgrad::quant
