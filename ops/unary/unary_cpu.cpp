// CPU unary kernels: unary_elem.h's functors and switches driven by cpu::map, so every op body is
// inlined and the contiguous rows vectorise.
#include "core/cpu_map.h"
#include "ops/unary/unary_elem.h"
#include "ops/unary/unary_kernels.h"

namespace qgrad {

void register_unary_cpu_kernels(KernelRegistry& r) {
  r.table(kUnaryKernels).define(DeviceType::CPU, &unary_elem::forward<cpu::Map>, kAllDTypes);
  r.table(kUnaryBackwardKernels)
      .define(DeviceType::CPU, &unary_elem::backward<cpu::Map>, kFloatingDTypes);
}

}  // namespace qgrad
