// quant::convert of an nn::Graph (an imported ONNX model): the walk over its nodes that builds an
// Int8Graph. Internal to deploy/int8; quant::convert calls it for a Graph model.
#pragma once

#include "deploy/int8/convert.h"
#include "nn/modules/graph.h"

namespace qgrad::quant::convert_detail {

// The int8 model of `graph` (see convert.h: the same layers and rules as for a Sequential, over
// the graph's values instead of a chain).
Int8Model convert_graph(const nn::Graph& graph, const ConvertOptions& options);

}  // namespace qgrad::quant::convert_detail
