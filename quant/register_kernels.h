// The quant layer's registrar: defines the kernels of its families for each device this build has
// and declares its user-facing ops. The umbrella library (qgrad.cpp) installs it after the
// layers below.
#pragma once

#include "core/dispatch.h"

namespace qgrad {

void register_quant_kernels(KernelRegistry& registry);

}  // namespace qgrad
