// See quantizer_device.h.
#include "quant/modules/quantizer_device.h"

#include "core/error.h"
#include "quant/modules/quant_conv2d.h"
#include "quant/modules/quant_linear.h"

namespace qgrad::quant {

const char* gpu_quantizers_summary() {
  return "every family's quantizers run there except histogram observers and calibrators and "
         "layers with an int32 bias";
}

void require_cpu_quantizer_input(const std::string& module, const Tensor& x) {
  QGRAD_CHECK(!x.defined() || x.device().is_cpu(), DeviceError, module,
              ": this quantizer runs on the CPU only in this version, got a tensor of shape ",
              x.shape(), " on ", x.device(),
              "; keep the quantized model on the CPU (model->to(kCPU)), or quantize it with a "
              "recipe that runs on the GPU (",
              gpu_quantizers_summary(), ")");
}

std::vector<std::string> quantizers_not_on(nn::Module& model, Device device) {
  std::vector<std::string> out;
  std::vector<std::string> inside;  // "NAME." of each module named so far
  for (const auto& [name, m] : model.named_modules()) {
    bool nested = false;
    for (const std::string& p : inside) nested = nested || name.rfind(p, 0) == 0;
    if (nested) continue;
    const auto* q = dynamic_cast<const RunsOn*>(m.get());
    // Off the CPU: an int32 bias reads its scales on the host every forward.
    const auto* conv = dynamic_cast<const QuantConv2d*>(m.get());
    const auto* linear = dynamic_cast<const QuantLinear*>(m.get());
    const bool int32_bias = (conv && conv->int32_bias()) || (linear && linear->int32_bias());
    const bool refused = (q != nullptr && !q->runs_on(device)) || (!device.is_cpu() && int32_bias);
    if (!refused) continue;
    out.push_back((name.empty() ? std::string("(root)") : name) + " (" + m->name() +
                  (int32_bias ? " with an int32 bias" : "") + ")");
    inside.push_back(name + ".");
  }
  return out;
}

}  // namespace qgrad::quant
