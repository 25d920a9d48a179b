// CUDA unary kernels: unary_elem.h's functors and switches driven by cuda::map (the same
// formulas as the CPU kernels, so the results are the same bits).
#include "core/cuda_map.cuh"
#include "ops/unary/unary_elem.h"
#include "ops/unary/unary_kernels.h"

namespace qgrad {

void register_unary_cuda_kernels(KernelRegistry& r) {
  r.table(kUnaryKernels).define(DeviceType::CUDA, &unary_elem::forward<cuda::Map>, kAllDTypes);
  r.table(kUnaryBackwardKernels)
      .define(DeviceType::CUDA, &unary_elem::backward<cuda::Map>, kFloatingDTypes);
}

}  // namespace qgrad
