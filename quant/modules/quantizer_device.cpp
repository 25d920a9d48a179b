// See quantizer_device.h.
#include "quant/modules/quantizer_device.h"

#include "core/error.h"

namespace qgrad::quant {

void require_cpu_quantizer_input(const std::string& module, const Tensor& x) {
  QGRAD_CHECK(!x.defined() || x.device().is_cpu(), DeviceError, module,
              ": the quantizers run on the CPU only in this version (they have no CUDA kernels "
              "yet), got a tensor of shape ",
              x.shape(), " on ", x.device(),
              "; keep the quantized model on the CPU (model->to(kCPU))");
}

}  // namespace qgrad::quant
