// DoReFaWeightQuantizer: DoReFa-Net's k-bit weight quantization (learnable::dorefa_quantize_weight:
// tanh, normalised to [0, 1], rounded to 2^k levels, mapped to [-1, 1]) as a module, the weight
// quantizer of the "pact" recipe family, as the PACT paper quantizes weights. No state.
#pragma once

#include <string>

#include "nn/unary_module.h"
#include "quant/modules/quantizer_device.h"

namespace qgrad::quant {

class DoReFaWeightQuantizer : public nn::UnaryModule, public RunsOn {
 public:
  // ValueError: num_bits outside [1, 16].
  explicit DoReFaWeightQuantizer(int num_bits = 4);

  Tensor forward(const Tensor& w) override;
  std::string extra_repr() const override;
  /// The CPU and a GPU (the PACT kernels run on both; nothing is read on the host).
  bool runs_on(Device device) const override { return device.is_cpu() || device.is_cuda(); }
  int num_bits() const { return num_bits_; }

 private:
  int num_bits_;
};

}  // namespace qgrad::quant
