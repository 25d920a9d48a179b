// CUDA where/logical kernels: where_elem.h's functors driven by cuda::map.
#include "core/cuda_map.cuh"
#include "ops/where/where_elem.h"
#include "ops/where/where_kernels.h"

namespace qgrad {

void register_where_cuda_kernels(KernelRegistry& r) {
  r.table(kWhereKernels).define(DeviceType::CUDA, &where_elem::where<cuda::Map>, kAllDTypes);
  r.table(kLogicalKernels)
      .define(DeviceType::CUDA, &where_elem::logical_kernel<cuda::Map>, DTypeSet{kUInt8});
}

}  // namespace qgrad
