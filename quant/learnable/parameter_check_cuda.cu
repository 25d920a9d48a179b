// The GPU's parameter check (parameter_check_kernels.h): one thread per value, an unusable one
// recorded in the device's deferred-error slot for the host's next wait.
#include <cstring>

#include "core/cuda_deferred_error.cuh"
#include "core/cuda_map.cuh"
#include "core/dtype.h"
#include "quant/learnable/parameter_check_kernels.h"

namespace qgrad::learnable {

namespace {

struct CheckParameter {
  const double* values;
  CheckedParameter which;
  ParameterRule rule;
  DeferredErrorOp op;
  CudaDeferredError* error;
  __device__ void operator()(std::int64_t i) const {
    if (parameter_usable(values[i], rule)) return;
    cuda::report_parameter_unusable(error, op, which, rule, i, values[i]);
  }
};

DeferredErrorOp op_id(const char* op) {
  if (std::strcmp(op, "pact_clip") == 0) return DeferredErrorOp::PactClip;
  if (std::strcmp(op, "pact_quantize") == 0) return DeferredErrorOp::PactQuantize;
  if (std::strcmp(op, "lsq_plus_quantize") == 0) return DeferredErrorOp::LsqPlusQuantize;
  if (std::strcmp(op, "dorefa_quantize_weight") == 0) return DeferredErrorOp::DoReFaQuantizeWeight;
  return DeferredErrorOp::LsqQuantize;
}

void check_parameter_cuda(const char* op, CheckedParameter which, ParameterRule rule,
                          const Tensor& values) {
  const Tensor v = values.to(kFloat64).contiguous();
  cuda::for_each_index(op, v.device(), v.numel(),
                       CheckParameter{v.data_ptr<double>(), which, rule, op_id(op),
                                      cuda_deferred_error_slot(v.device().index)});
}

}  // namespace

void register_parameter_check_cuda_kernels(KernelRegistry& r) {
  r.table(kCheckParameterKernels).define(DeviceType::CUDA, &check_parameter_cuda, kFloatingDTypes);
}

}  // namespace qgrad::learnable
