// DoReFaWeightQuantizer: dorefa_quantize_weight as a module.
#include "quant/modules/dorefa_weight_quantizer.h"

#include "core/error.h"
#include "quant/learnable/dorefa.h"
#include "quant/learnable/pact_bits.h"
#include "quant/modules/quantizer_device.h"

namespace qgrad::quant {

DoReFaWeightQuantizer::DoReFaWeightQuantizer(int num_bits)
    : nn::UnaryModule("DoReFaWeightQuantizer"), num_bits_(num_bits) {
  QGRAD_CHECK(num_bits >= learnable::kPactMinBits && num_bits <= learnable::kPactMaxBits,
              ValueError, "DoReFaWeightQuantizer: num_bits must lie in [", learnable::kPactMinBits,
              ", ", learnable::kPactMaxBits, "], got ", num_bits);
}

Tensor DoReFaWeightQuantizer::forward(const Tensor& w) {
  if (!runs_on(w.device())) require_cpu_quantizer_input(name(), w);
  return learnable::dorefa_quantize_weight(w, num_bits_);
}

std::string DoReFaWeightQuantizer::extra_repr() const {
  return "num_bits=" + std::to_string(num_bits_);
}

}  // namespace qgrad::quant
