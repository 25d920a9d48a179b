// Int32 bias quantization: the bias of a layer whose input and weights are quantized, fake
// quantized onto the int32 grid an integer runtime adds it on, scale s_in * s_w[c] (the input
// scale times each output channel's weight scale, a float32 product) and zero point 0. This is
// the ONNX QDQ convention (a DequantizeLinear of int32 bias values), and ONNX Runtime applies it
// to every float bias of a Conv / Gemm whose input and weight come from DequantizeLinear, so a
// model trained with a float bias is not the model ONNX Runtime runs: at 4 bits the rounding
// reaches half an output step. Training with the bias on this grid makes the fake-quantized
// forward, qgrad's int8 model and ONNX Runtime (graph optimizations on or off) add the same
// bias. The scales come from qdq_params() (the numbers the exporters write), the rounding is
// torch.ao's per-channel fake quantization (rne(b * (1 / s)), clamped to int32) with its
// straight-through gradient for the bias; no gradient reaches the scales through the bias.
// The scales are read on the host each forward (a device synchronisation on CUDA).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "nn/unary_module.h"

namespace qgrad::quant {

// The bias grid's scales, one per output channel (out_channels of them), or nullopt when the
// bias stays float: a quantizer is null or currently passes values through (disabled,
// calibrating), or an AIMET quantizer is inside compute_encodings. ValueError naming `op` and
// `where` for a per-channel input quantizer, per-channel weight scales that are not one per output
// channel, a quantizer without an 8-bit integer grid (qdq_params()'s errors) or a product that is
// zero, denormal or infinite.
std::optional<std::vector<float>> int32_bias_scale(const nn::UnaryModule* input_quantizer,
                                                   const nn::UnaryModule* weight_quantizer,
                                                   std::int64_t out_channels, const std::string& op,
                                                   const std::string& where);

// The bias (1-D, float32, scale.size() elements) fake quantized onto the grid: float(q) * s with
// q = clamp(rne(b * (1 / s)), INT32_MIN, INT32_MAX); the gradient passes to the bias unchanged
// where q was not clamped.
Tensor fake_quantize_int32_bias(const Tensor& bias, const std::vector<float>& scale);

// The grid of a QuantConv2d / QuantLinear `layer`'s bias: int32_bias_scale over its quantizers,
// or nullopt when the layer has no bias or its int32 bias is off. The one gate that the layer's
// forward, the ONNX exporter and the int8 converter share, so all three add the same bias.
template <typename Layer>
std::optional<std::vector<float>> layer_bias_grid(const Layer& layer, const std::string& op,
                                                  const std::string& where) {
  const Tensor& bias = layer.bias();
  if (!layer.int32_bias() || !bias.defined()) return std::nullopt;
  return int32_bias_scale(layer.input_quantizer().get(), layer.weight_quantizer().get(),
                          bias.numel(), op, where);
}

// What a QuantConv2d / QuantLinear adds: its bias, fake quantized onto layer_bias_grid's grid
// when there is one (op names the layer type in errors).
template <typename Layer>
Tensor layer_bias(const Layer& layer, const std::string& op) {
  const std::optional<std::vector<float>> grid = layer_bias_grid(layer, op, "int32 bias");
  return grid ? fake_quantize_int32_bias(layer.bias(), *grid) : layer.bias();
}

// The integers q of fake_quantize_int32_bias (the values an exporter writes).
std::vector<std::int32_t> int32_bias_values(const Tensor& bias, const std::vector<float>& scale);

}  // namespace qgrad::quant
