// core/'s kernels: allocators, copies, fills and transfers, for each device this build has.
#include "core/core_kernels.h"

namespace qgrad {

void register_core_kernels(KernelRegistry& r) {
  register_allocator_cpu_kernels(r);
  register_copy_cpu_kernels(r);
#ifdef QGRAD_WITH_CUDA
  register_allocator_cuda_kernels(r);
  register_copy_cuda_kernels(r);
#endif
}

}  // namespace qgrad
