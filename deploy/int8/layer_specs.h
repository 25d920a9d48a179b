// The int8 specs of single layers of a QAT model, shared by quant::convert's walk over a
// Sequential (convert.cpp) and over an nn::Graph (convert_graph.cpp): each quantizer's grid, a
// quantized convolution with a float batch norm and a ReLU folded into it, a quantized linear
// layer, a max pool, and the two input grids of a residual QuantAdd. Every check names the layer
// ("int8 convert: layer '3' (QuantConv2d) ..."). Internal to deploy/int8.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "core/shape.h"
#include "deploy/common/module_walk.h"
#include "deploy/int8/int8_conv2d.h"
#include "deploy/int8/int8_grid.h"
#include "deploy/int8/int8_linear.h"
#include "deploy/int8/int8_max_pool2d.h"
#include "nn/modules/pooling.h"
#include "quant/modules/qdq_params.h"

namespace qgrad::quant::convert_detail {

inline constexpr const char kOp[] = "int8 convert";

// The shared walk (deploy/common/module_walk.h): Item, describe, is<T>, skipped, flatten_into.
using deploy::describe;
using deploy::flatten_into;
using deploy::is;
using deploy::Item;
using deploy::skipped;

// QuantConv2d, QuantConvBn2d or QuantLinear.
bool is_quantized_layer(const Item& item);

// The 8-bit parameters of a quantizer: deploy/common's, LSQ's learned affine grid included.
QdqParams params_of(const nn::UnaryModule& quantizer, const std::string& where);

// The grid of a quantized layer's input quantizer; ValueError when there is none.
Int8Grid input_grid(const std::shared_ptr<nn::UnaryModule>& quantizer, const std::string& where);

// `q`, or a ValueError naming `where` when it is missing.
const std::shared_ptr<nn::UnaryModule>& require_quantizer(const std::shared_ptr<nn::UnaryModule>& q,
                                                          const std::string& where);

// The input quantizer of a QuantConv2d / QuantConvBn2d / QuantLinear (null for anything else).
std::shared_ptr<nn::UnaryModule> input_quantizer_of(const nn::Module& m);

// The int8 convolution of `conv` (QuantConv2d or QuantConvBn2d, folded) with `bn` (a float
// BatchNorm2d after a QuantConv2d; null: none) folded into its output scales and bias, a fused
// ReLU when `relu`, writing `output` (none: float32).
Int8Conv2dSpec conv_spec(const Item& conv_item, const Item* bn_item, bool relu,
                         std::optional<Int8Grid> output);

// The int8 linear layer of a QuantLinear `item`, with a fused ReLU when `relu`, writing `output`.
Int8LinearSpec linear_spec(const Item& item, bool relu, std::optional<Int8Grid> output);

// The int8 max pool of `p`.
Int8MaxPool2dSpec pool_spec(const Item& item, const nn::MaxPool2d& p);

// A residual add and its two input grids.
struct ResidualAdd {
  Item item;
  Int8Grid input0, input1;
};
// ValueError unless `add_item` is a QuantAdd with both input quantizers.
ResidualAdd residual_add(Item add_item);

}  // namespace qgrad::quant::convert_detail
