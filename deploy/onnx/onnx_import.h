// import_onnx: a float CNN exported to ONNX (torch.onnx.export, default-domain opsets up to 17)
// as a qgrad model with its weights, ready for quant::quantize_model, PTQ and QAT. The model is
// an nn::Graph whose children are ordinary modules named after the ONNX nodes (sanitized: every
// character but letters, digits and '_' becomes '_', leading '_' dropped; clashes get "_1", "_2"),
// run in the file's node order: Conv -> Conv2d (groups, strides, symmetric pads, dilations, bias),
// BatchNormalization -> BatchNorm2d with the file's running statistics (kept, not folded),
// Relu -> ReLU, Clip -> ReLU6 / ReLU / Hardtanh, Add of two values -> nn::Add (which
// quantize_model turns into a QuantAdd), MaxPool -> MaxPool2d, AveragePool -> AvgPool2d (also
// after a zero Pad, PyTorch's export of count_include_pad=True),
// GlobalAveragePool -> AdaptiveAvgPool2d(1), Flatten(axis 1) and Reshape to [N, -1] -> Flatten,
// Gemm (alpha = beta = 1, B and C constants) -> Linear, MatMul by a constant followed by an Add
// of a constant vector -> Linear, Identity and Dropout -> Identity; Constant nodes and
// initializers feed the operands that must be constant. Anything else is a ValueError naming
// the node and its operator, and an attribute the mapping cannot honour (asymmetric pads,
// ceil_mode, auto_pad, a transposed A, ...) one naming the node and the attribute: the result
// is the file's model or an error, never a different model. A file that is not an ONNX model
// (unparsable, truncated, no graph) is a ValueError naming the file, and so is a NaN or infinity
// in an initializer or Constant (naming also the tensor, the node reading it and the element).
#pragma once

#include <memory>
#include <string>

#include "nn/modules/graph.h"

namespace qgrad::deploy {

/// The model of ONNX file `path` (see the file comment); IOError when it cannot be read.
std::shared_ptr<nn::Graph> import_onnx(const std::string& path);

/// The same from the file's bytes; `what` names the source in error messages.
std::shared_ptr<nn::Graph> import_onnx_bytes(const std::string& bytes, const std::string& what);

}  // namespace qgrad::deploy
