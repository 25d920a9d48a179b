// CPU binary kernels: binary_elem.h's functors driven by cpu::map, whose contiguous and
// scalar-operand rows are plain loops the compiler vectorises.
#include "core/core_kernels.h"
#include "core/cpu_map.h"
#include "ops/binary/binary_elem.h"
#include "ops/binary/binary_kernels.h"

namespace qgrad {

void register_binary_cpu_kernels(KernelRegistry& r) {
  r.table(kBinaryKernels).define(DeviceType::CPU, &binary_elem::kernel<cpu::Map>, kAllDTypes);
  r.table(kAddKernels).define(DeviceType::CPU, &binary_elem::add<cpu::Map>, kAllDTypes);
}

}  // namespace qgrad
