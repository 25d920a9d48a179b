// The quant layer's kernels (fake quantizers, observers, calibrators) for each device this build
// has.
#include "core/dispatch.h"

namespace qgrad {

void register_quant_kernels(KernelRegistry&) {}

}  // namespace qgrad
