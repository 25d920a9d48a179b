// PactActivationQuantizer: PACT's activation quantizer (Choi et al. 2018) as a module, the input
// quantizer of the "pact" recipe family: y = rne(clip(x, 0, alpha) / d) * d, d = alpha / (2^k - 1)
// (learnable::pact_quantize), with alpha a learned Parameter of one element (initial value
// `alpha`, the paper's 10 by default). Placed at a layer's input, after the ReLU of the layer
// before, it is PACT's clipped activation: clip(relu(x), 0, alpha) = clip(x, 0, alpha). Negative
// inputs become 0, so the first layer's input (a normalised image) is usually left float. The
// paper's L2 penalty on alpha is the optimiser's weight decay on this parameter in `qgrad train`.
// State: "alpha".
#pragma once

#include <string>

#include "nn/unary_module.h"
#include "quant/modules/quantizer_device.h"

namespace qgrad::quant {

class PactActivationQuantizer : public nn::UnaryModule, public RunsOn {
 public:
  // ValueError: num_bits outside [1, 16], alpha not finite and > 0.
  explicit PactActivationQuantizer(int num_bits = 4, double alpha = 10.0);

  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  /// The CPU and a GPU (the PACT kernels run on both; nothing is read on the host).
  bool runs_on(Device device) const override { return device.is_cpu() || device.is_cuda(); }

  int num_bits() const { return num_bits_; }
  const Tensor& alpha() const { return alpha_; }

 private:
  int num_bits_;
  Tensor alpha_;
};

}  // namespace qgrad::quant
