// CUDA kernels of torch.ao fake quantization, registered in the "torch_ao.*" tables. So far the
// masked straight-through backward, which the fused observer + fake quant's per-channel form
// takes: fake_quantize_elem.h's MaskedGradientElem through cuda::map, as cpu::map runs it on the
// CPU, so both give the same bits. The per-tensor and per-channel forwards and the learnable
// backwards have no CUDA kernels yet.
#include "core/cuda_map.cuh"
#include "core/dtype.h"
#include "quant/torch_ao/fake_quantize_elem.h"
#include "quant/torch_ao/fake_quantize_kernels.h"

namespace qgrad::ao {

namespace {

void masked_gradient_cuda(const Tensor& dy, const Tensor& mask, const Tensor& dx) {
  QGRAD_DISPATCH_FLOAT(dx.dtype(), "fake_quantize backward", [&] {
    cuda::map<scalar_t, scalar_t, std::uint8_t>("fake_quantize backward",
                                                MaskedGradientElem<scalar_t>{}, dx, dy, mask);
  });
}

}  // namespace

void register_fake_quantize_cuda_kernels(KernelRegistry& r) {
  r.table(kMaskedGradientKernels).define(DeviceType::CUDA, &masked_gradient_cuda, kFloatingDTypes);
}

}  // namespace qgrad::ao
