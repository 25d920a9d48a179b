/// @file
/// The devices the quantizers run on. Every quantizer runs on the CPU; on a GPU only those whose
/// family has CUDA kernels and keeps its state on the device (RunsOn::runs_on), so far torch.ao's
/// quantizers with min/max observers (FusedMovingAvgObsFakeQuantize, FakeQuantize,
/// LearnableFakeQuantize and their Observer unless it is a HistogramObserver) and
/// HorizonFakeQuantize, PactActivationQuantizer and DoReFaWeightQuantizer. The others stop a GPU
/// tensor at their forward with a DeviceError that names the module, instead of failing somewhere
/// below it, and quantizers_not_on() lets a command refuse such a model before any work.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "nn/module.h"

namespace qgrad::quant {

/// What every quantization module says: the devices its forward runs on (where its kernels exist
/// and its step reads no device memory on the host). The CPU, unless the family says more.
class RunsOn {
 public:
  virtual ~RunsOn() = default;
  /// Whether the module's forward runs on `device`.
  virtual bool runs_on(Device device) const { return device.is_cpu(); }
};

/// What runs on a GPU so far, as errors and help texts say it: every family's quantizers but
/// histogram observers and calibrators and layers with an int32 bias.
const char* gpu_quantizers_summary();

/// Throws DeviceError naming `module` unless `x` is undefined or on the CPU.
void require_cpu_quantizer_input(const std::string& module, const Tensor& x);

/// The quantization modules of `model` that cannot run on `device`, each as "NAME (TYPE)" in
/// module-tree order (not those inside one already named): modules whose runs_on(device) is false
/// and, off the CPU, layers with an int32 bias (its scales are read on the host). Empty when the
/// model can run there.
std::vector<std::string> quantizers_not_on(nn::Module& model, Device device);

}  // namespace qgrad::quant
