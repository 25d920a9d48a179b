// CPU optimiser updates: optim_elem.h's functors over the parameter, split across threads.
#include "core/cpu_map.h"
#include "nn/optim/optim_elem.h"

namespace qgrad::optim {

void register_optim_cpu_kernels(KernelRegistry& r) {
  r.table(kSgdUpdateKernels)
      .define(DeviceType::CPU, &optim_elem::sgd_update<cpu::Map>, kFloatingDTypes);
  r.table(kAdamUpdateKernels)
      .define(DeviceType::CPU, &optim_elem::adam_update<cpu::Map>, kFloatingDTypes);
}

}  // namespace qgrad::optim
