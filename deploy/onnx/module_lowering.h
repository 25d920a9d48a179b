// ModuleLowering: turns a qgrad module tree into ONNX nodes in an OnnxGraph, layer by layer in
// forward order. Float layers: Conv2d (a BatchNorm2d right after it, in a Sequential or a
// BasicBlock, is folded into its weight and bias), BatchNorm2d on its own (BatchNormalization),
// Linear (Gemm), ReLU, ReLU6, LeakyReLU, Sigmoid, Tanh, MaxPool2d, AvgPool2d,
// AdaptiveAvgPool2d(1) (GlobalAveragePool), Flatten(1, -1), Add, Identity and Dropout (dropped:
// inference), Sequential, BasicBlock, InvertedResidual (MobileNetV2's; its grouped depthwise
// convolution is a Conv with group, ReLU6 a Clip to [0, 6]) and Graph (an imported model: its
// nodes in run order over their named values, a Conv2d whose output only a BatchNorm2d reads
// folded as in a Sequential). QAT layers (QuantConv2d,
// QuantConvBn2d, QuantLinear, QuantAdd): QuantizeLinear / DequantizeLinear on each quantized
// activation (a Clip first when the grid is narrower than int8 / uint8) and DequantizeLinear of
// int8 / uint8 weight initializers; QuantConvBn2d exports its folded weight quantized as in
// training, with bias (b - mean) * s + beta, s = gamma / sqrt(var + eps). Any other module is a
// ValueError naming the layer and its type. Without `qdq` (the float form, what AIMET exports next
// to an encodings file) the QAT layers lower to their float computation: no Q/DQ, float weight
// initializers (QuantConvBn2d's folded W * s), and every quantizer of any family is only
// recorded. Either way, each quantizer is recorded as a QuantizerSite: the ONNX name of the
// float tensor it quantizes (an activation, or "<layer>_weight", the weight initializer of the
// float form and the DequantizeLinear output of the QDQ form). In the float form, an activation
// that an earlier quantizer already took (a residual block's input, quantized by conv1 and by
// the QuantAdd) goes through an Identity named after the later quantizer, so every site has a
// tensor of its own.
#pragma once

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "deploy/onnx/onnx_graph.h"
#include "nn/modules/add.h"
#include "nn/unary_module.h"

namespace qgrad::deploy {

// One quantizer of the lowered model and the ONNX tensor it quantizes.
struct QuantizerSite {
  std::string tensor;                // the float tensor's ONNX name
  const nn::UnaryModule* quantizer;  // owned by the model
  std::string where;                 // "layer '0' (QuantConv2d) weight quantizer"
  bool is_param = false;             // a weight (else an activation)
};

class ModuleLowering {
 public:
  explicit ModuleLowering(OnnxGraph& graph, bool qdq = true) : g_(graph), qdq_(qdq) {}
  // The quantizers met so far, in graph order.
  const std::vector<QuantizerSite>& sites() const { return sites_; }
  // Appends the nodes of `module` (qualified name `path`, "" for the root) applied to the value
  // `x`; returns the name of its output.
  std::string lower(const nn::Module& module, const std::string& path, const std::string& x);

 private:
  // `first` then `second`, folding a BatchNorm2d `second` into a Conv2d `first`.
  std::string lower_pair(const std::shared_ptr<nn::Module>& first, const std::string& first_path,
                         const std::shared_ptr<nn::Module>& second, const std::string& second_path,
                         const std::string& x);
  std::string lower_sequential(const nn::Module& seq, const std::string& path,
                               const std::string& x);
  std::string lower_basic_block(const nn::Module& block, const std::string& path,
                                const std::string& x);
  std::string lower_inverted_residual(const nn::Module& block, const std::string& path,
                                      const std::string& x);
  std::string lower_graph(const nn::Module& graph, const std::string& path, const std::string& x);
  // The residual sum a + b of `add` (an Add, or a QuantAdd: Q/DQ on each input first).
  std::string lower_add(const nn::Add& add, const std::string& path, const std::string& a,
                        const std::string& b);
  // Q/DQ (and Clip) of an activation by `quantizer` (null: none).
  std::string quantize_activation(const std::shared_ptr<nn::UnaryModule>& quantizer,
                                  const std::string& where, const std::string& base,
                                  const std::string& x);
  // The weight as a float initializer, or int8/uint8 initializer + DequantizeLinear.
  std::string weight_value(const std::shared_ptr<nn::UnaryModule>& quantizer, const Tensor& w,
                           const std::string& where, const std::string& base);
  // The bias of a quantized layer ("" when it has none): a float initializer, or with the
  // layer's int32 bias on (int32_bias.h) an int32 initializer + DequantizeLinear at scale
  // s_in * s_w, so runtimes add the integers training added.
  // Layer: QuantConv2d or QuantLinear (defined and used in module_lowering.cpp only).
  template <typename Layer>
  std::string bias_value(const Layer& layer, const std::string& where, const std::string& base);
  std::string conv_node(const nn::Module& conv_like, const std::string& path, const std::string& x,
                        const std::string& w, const std::string& b);

  OnnxGraph& g_;
  bool qdq_;
  std::vector<QuantizerSite> sites_;
  std::unordered_set<std::string> quantized_;  // activation tensors with a site
};

// "layer 'layer1.0.conv1' (QuantConv2d)", "the model (Sequential)" for the root.
std::string describe_layer(const nn::Module& module, const std::string& path);

}  // namespace qgrad::deploy
