// CUDA binary kernels: binary_elem.h's functors driven by cuda::map (the same formulas as the CPU
// kernels; pow takes the general form, since its exponent lives on the device).
#include "core/core_kernels.h"
#include "core/cuda_map.cuh"
#include "ops/binary/binary_elem.h"
#include "ops/binary/binary_kernels.h"

namespace qgrad {

void register_binary_cuda_kernels(KernelRegistry& r) {
  r.table(kBinaryKernels).define(DeviceType::CUDA, &binary_elem::kernel<cuda::Map>, kAllDTypes);
  r.table(kAddKernels).define(DeviceType::CUDA, &binary_elem::add<cuda::Map>, kAllDTypes);
}

}  // namespace qgrad
