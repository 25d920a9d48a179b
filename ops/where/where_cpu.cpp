// CPU where/logical kernels: where_elem.h's functors driven by cpu::map (contiguous and
// broadcast-scalar rows vectorise: where(c, x, scalar) is the masking every backward uses).
#include "core/cpu_map.h"
#include "ops/where/where_elem.h"
#include "ops/where/where_kernels.h"

namespace qgrad {

void register_where_cpu_kernels(KernelRegistry& r) {
  r.table(kWhereKernels).define(DeviceType::CPU, &where_elem::where<cpu::Map>, kAllDTypes);
  r.table(kLogicalKernels)
      .define(DeviceType::CPU, &where_elem::logical_kernel<cpu::Map>, DTypeSet{kUInt8});
}

}  // namespace qgrad
