// The bit widths of the PACT family's quantizers, PACT activations (pact_quantize) and DoReFa
// weights (dorefa_quantize_weight), checked by the functions, their modules and the "pact"
// recipe alike. One range, [1, 16]: 1 bit is the smallest grid the papers use (DoReFa's binary
// weights), and 16 is the widest integer type a quantized tensor is stored or exported in
// (ONNX QuantizeLinear and every integer runtime stop at int16 / uint16; qgrad's LSQ recipe
// stops there too). Float32 would represent the levels exactly up to 24 bits (the bound the
// NVIDIA family's integer quant checks, QUANT-SPEC.md section 1), which pact_quantize allowed
// before issue 26, but a 17..24 bit grid has no integer type to deploy to, and the recipe and
// the modules never accepted it.
#pragma once

namespace qgrad::learnable {

constexpr int kPactMinBits = 1;
constexpr int kPactMaxBits = 16;

}  // namespace qgrad::learnable
