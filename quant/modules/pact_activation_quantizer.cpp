// PactActivationQuantizer: the learned clipping level and pact_quantize.
#include "quant/modules/pact_activation_quantizer.h"

#include <cmath>
#include <cstdio>

#include "core/factory.h"
#include "quant/learnable/pact.h"
#include "quant/learnable/pact_bits.h"
#include "quant/modules/quantizer_device.h"

namespace qgrad::quant {

PactActivationQuantizer::PactActivationQuantizer(int num_bits, double alpha)
    : nn::UnaryModule("PactActivationQuantizer"), num_bits_(num_bits) {
  QGRAD_CHECK(num_bits >= learnable::kPactMinBits && num_bits <= learnable::kPactMaxBits,
              ValueError, "PactActivationQuantizer: num_bits must lie in [",
              learnable::kPactMinBits, ", ", learnable::kPactMaxBits, "], got ", num_bits);
  QGRAD_CHECK(std::isfinite(alpha) && alpha > 0, ValueError,
              "PactActivationQuantizer: alpha must be finite and > 0, got ", alpha);
  alpha_ = register_parameter("alpha", full({1}, alpha));
}

Tensor PactActivationQuantizer::forward(const Tensor& x) {
  if (!runs_on(x.device())) require_cpu_quantizer_input(name(), x);
  return learnable::pact_quantize(x, alpha_, num_bits_);
}

std::string PactActivationQuantizer::extra_repr() const {
  char b[96];
  std::snprintf(b, sizeof b, "num_bits=%d, alpha=%.4g", num_bits_, alpha_.item<double>());
  return b;
}

}  // namespace qgrad::quant
