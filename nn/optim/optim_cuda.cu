// CUDA optimiser updates: optim_elem.h's functors, one thread per element (the same formulas as
// the CPU, so the same bits).
#include "core/cuda_map.cuh"
#include "nn/optim/optim_elem.h"

namespace qgrad::optim {

void register_optim_cuda_kernels(KernelRegistry& r) {
  r.table(kSgdUpdateKernels)
      .define(DeviceType::CUDA, &optim_elem::sgd_update<cuda::Map>, kFloatingDTypes);
  r.table(kAdamUpdateKernels)
      .define(DeviceType::CUDA, &optim_elem::adam_update<cuda::Map>, kFloatingDTypes);
}

}  // namespace qgrad::optim
