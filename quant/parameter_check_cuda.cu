// The GPU's parameter check (parameter_check_kernels.h): one thread per value, read in its own
// dtype, an unusable one recorded in the device's deferred-error slot for the host's next wait.
#include "core/cuda_deferred_error.cuh"
#include "core/cuda_map.cuh"
#include "core/dtype.h"
#include "quant/parameter_check_kernels.h"

namespace qgrad::quant {

namespace {

template <typename T>
struct CheckParameter {
  const T* values;
  const char* op;
  CheckedParameter which;
  ParameterRule rule;
  CudaDeferredError* error;
  __device__ void operator()(std::int64_t i) const {
    const double v = static_cast<double>(values[i]);
    if (parameter_usable(v, rule)) return;
    cuda::report_parameter_unusable(error, op, which, rule, i, v);
  }
};

void check_parameter_cuda(const char* op, CheckedParameter which, ParameterRule rule,
                          const Tensor& values) {
  const Tensor v = values.contiguous();
  QGRAD_DISPATCH_FLOAT(v.dtype(), op, [&] {
    cuda::for_each_index(op, v.device(), v.numel(),
                         CheckParameter<scalar_t>{v.data_ptr<scalar_t>(), op, which, rule,
                                                  cuda_deferred_error_slot(v.device().index)});
  });
}

}  // namespace

void register_parameter_check_cuda_kernels(KernelRegistry& r) {
  r.table(kCheckParameterKernels).define(DeviceType::CUDA, &check_parameter_cuda, kFloatingDTypes);
}

}  // namespace qgrad::quant
