// CUDA kernels of torch.ao fake quantization, registered in the "torch_ao.*" tables: the forward
// with its qparams as device tensors (fake_quantize_qparams_kernel.h through cuda::Map, the value
// and the mask in one pass), the check of those qparams, which records unusable ones for the
// host's next wait instead of making it wait now (core/cuda_deferred_error.h), and the masked
// straight-through backward (fake_quantize_elem.h's MaskedGradientElem through cuda::map), and
// the learnable fake quantizer's qparams and backward with its parameters on the device
// (learnable_fake_quantize_kernel.h). The element functors are the CPU's, so both give the same
// bits.
#include "core/cuda_deferred_error.cuh"
#include "core/cuda_map.cuh"
#include "core/dtype.h"
#include "core/factory.h"
#include "quant/torch_ao/fake_quantize_elem.h"
#include "quant/torch_ao/fake_quantize_kernels.h"
#include "quant/torch_ao/fake_quantize_qparams_kernel.h"
#include "quant/torch_ao/learnable_fake_quantize_kernel.h"

namespace qgrad::ao {

namespace {

void masked_gradient_cuda(const Tensor& dy, const Tensor& mask, const Tensor& dx) {
  QGRAD_DISPATCH_FLOAT(dx.dtype(), "fake_quantize backward", [&] {
    cuda::map<scalar_t, scalar_t, std::uint8_t>("fake_quantize backward",
                                                MaskedGradientElem<scalar_t>{}, dx, dy, mask);
  });
}

void fake_quantize_qparams_cuda(const Tensor& x, const Tensor& scale, const Tensor& zero_point,
                                std::int64_t axis, std::int64_t quant_min, std::int64_t quant_max,
                                const Tensor& y, const Tensor& mask) {
  fake_quantize_qparams<cuda::Map>(x, scale, zero_point, axis, quant_min, quant_max, y, mask);
}

// Checks qparams c of n; a failure is recorded in the device's slot.
struct CheckQParams {
  const float* scale;
  const double* zero_point;
  bool float_zero_point, per_channel;
  std::int64_t quant_min, quant_max;
  const char* op;  // a string literal (the fronts' op names)
  CudaDeferredError* error;
  __device__ void operator()(std::int64_t c) const {
    if (qparams_usable(scale[c], zero_point[c], float_zero_point, static_cast<double>(quant_min),
                       static_cast<double>(quant_max)))
      return;
    cuda::report_qparams_unusable(error, op, per_channel ? c : -1, scale[c], zero_point[c],
                                  quant_min, quant_max);
  }
};

void check_qparams_cuda(const char* op, const Tensor& scale, const Tensor& zero_point,
                        bool float_zero_point, std::int64_t quant_min, std::int64_t quant_max) {
  const Tensor s = scale.to(kFloat32).contiguous();
  const Tensor z = zero_point.to(kFloat64).contiguous();  // exact for int32; int64 up to 2^53
  cuda::for_each_index(
      op, scale.device(), s.numel(),
      CheckQParams{s.data_ptr<float>(), z.data_ptr<double>(), float_zero_point, s.numel() > 1,
                   quant_min, quant_max, op, cuda_deferred_error_slot(scale.device().index)});
}

void learnable_qparams_cuda(const Tensor& scale, const Tensor& zero_point, std::int64_t quant_min,
                            std::int64_t quant_max, bool per_tensor, const Tensor& forward_scale,
                            const Tensor& forward_zero_point, const Tensor& backward_zero_point) {
  learnable_qparams<cuda::Map>(scale, zero_point, quant_min, quant_max, per_tensor, forward_scale,
                               forward_zero_point, backward_zero_point);
}

void learnable_backward_operands_cuda(const Tensor& x, const Tensor& dy, const Tensor& scale,
                                      const Tensor& zero_point, std::int64_t axis,
                                      std::int64_t quant_min, std::int64_t quant_max,
                                      double grad_factor, const Tensor& dx, const Tensor& dscale,
                                      const Tensor& dzero_point) {
  learnable_backward_operands<cuda::Map>(x, dy, scale, zero_point, axis, quant_min, quant_max,
                                         grad_factor, dx, dscale, dzero_point);
}

}  // namespace

void register_fake_quantize_cuda_kernels(KernelRegistry& r) {
  r.table(kLearnableQParamsKernels)
      .define(DeviceType::CUDA, &learnable_qparams_cuda, kFloatingDTypes);
  r.table(kLearnableBackwardOperandsKernels)
      .define(DeviceType::CUDA, &learnable_backward_operands_cuda, kFloatingDTypes);
  r.table(kFakeQuantizeQParamsKernels)
      .define(DeviceType::CUDA, &fake_quantize_qparams_cuda, kFloatingDTypes);
  r.table(kCheckQParamsKernels).define(DeviceType::CUDA, &check_qparams_cuda, kFloatingDTypes);
  r.table(kMaskedGradientKernels).define(DeviceType::CUDA, &masked_gradient_cuda, kFloatingDTypes);
}

}  // namespace qgrad::ao
