// The quantization-aware training steps of `qgrad train` and `qgrad eval`: quantizing the float
// model with the recipe a TrainConfig holds (config.quant; quant::quantize_model: the Conv2d,
// Linear and residual Add layers the recipe covers become their QAT versions, sharing the float
// weights), calibrating it on a few batches of the training set, and the lines the train command
// prints about both. A checkpoint of a quantized model is loaded into a freshly built and
// quantized one with quant::load_quant_state_dict (some quantizer buffers are sized lazily).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/train_config.h"
#include "distributed/process_group.h"
#include "nn/data/dataset.h"
#include "nn/unary_module.h"
#include "quant/modules/quant_recipe.h"

namespace qgrad::cli {

struct QuantizedLayers {
  std::string family;
  std::vector<std::string> names;  // qualified module names, as quantize_model returns them
  std::vector<std::string> types;  // their new type names ("QuantConv2d", ..., "Identity" for
                                   // a batch norm fused into the conv before it)
  // For the layers a "layers" rule matches: what it changed ("weight num_bits=8, input float").
  std::map<std::string, std::string> overrides;
};

// Quantizes `model` in place with the recipe; UsageError when the recipe does not fit the model
// (an "exclude" name that is not one of its modules).
QuantizedLayers quantize_for_training(nn::Module& model, const quant::QuantRecipe& recipe);
// "torch_ao recipe, 5 layers quantized: 0 (QuantConv2d), 4 (QuantConv2d), 9 (QuantLinear), ...",
// with fuse_bn "0 (QuantConvBn2d with batch norm 1), ...", and a "layers" rule's changes
// "0 (QuantConv2d; weight num_bits=8, input num_bits=8)".
std::string describe(const QuantizedLayers& layers);

struct CalibrationReport {
  std::int64_t batches = 0;  // 0: the recipe asks for no calibration
  std::int64_t images = 0;
  std::size_t quantizers = 0;  // calibratable quantizers of the model
  double time_s = 0;
};

// Runs recipe.calibration_batches() batches of `train_set` (config.batch_size examples each, in
// the shuffled order of config.seed, with the test transforms: normalisation, no augmentation)
// through the model under quant::calibrate_model with the recipe's calibration options. The
// data continue into the next epoch when more batches are asked for than one epoch has. Does
// nothing when the recipe asks for 0 batches. The batches go to `device`, the model's. With a
// `group` of N > 1 ranks, calibration batch k is global batch k of N x config.batch_size
// examples, each rank reading its part (data::DataLoaderOptions::shard) and the quantizers
// reducing their statistics over the ranks (quant::synchronize_statistics): what one process
// with batch N x config.batch_size computes.
CalibrationReport calibrate_on_training_set(nn::UnaryModule& model,
                                            const quant::QuantRecipe& recipe,
                                            std::shared_ptr<const data::Dataset> train_set,
                                            const TrainConfig& config, Device device = kCPU,
                                            const distributed::ProcessGroup* group = nullptr);
// "calibrated 10 quantizers on 8 batches (1024 training images) in 0.3 s", or what happens
// without calibration.
std::string describe(const CalibrationReport& report, const quant::QuantRecipe& recipe);

}  // namespace qgrad::cli
