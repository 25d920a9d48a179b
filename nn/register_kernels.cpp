// The nn layer's kernels (optimiser updates, gradient clipping) for each device this build has.
#include "core/dispatch.h"

namespace qgrad {

void register_nn_kernels(KernelRegistry&) {}

}  // namespace qgrad
