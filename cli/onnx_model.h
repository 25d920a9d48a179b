// The model of a config whose "model" is {"onnx": FILE}: the float CNN of an ONNX file
// (deploy::import_onnx), checked against the data it will train or evaluate on, so that a
// wrong input size or class count is an error naming the file before training starts.
#pragma once

#include <memory>

#include "cli/dataset_factory.h"
#include "cli/train_config.h"
#include "nn/unary_module.h"

namespace qgrad::cli {

// The model of `config.onnx` (non-empty), in training mode. One forward of a zero image of
// `shape` must give [1, shape.num_classes] logits: UsageError naming the file otherwise, and
// ValueError (the import's) for a file that is not a supported model; UsageError when this qgrad
// was built without ONNX.
std::shared_ptr<nn::UnaryModule> onnx_model(const TrainConfig& config, const DataShape& shape);

}  // namespace qgrad::cli
