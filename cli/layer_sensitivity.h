// Measuring what quantizing part of a float model costs, for `qgrad sensitivity` and
// `qgrad autoquant`: a SensitivityBench holds a float checkpoint, its training set (for
// calibration) and a fixed subset of its test set; measure() rebuilds the float model, quantizes
// it with a recipe (optionally only one layer: every other quantizable layer excluded),
// calibrates it post-training (cli/qat_setup.h: the recipe's calibration batches), wraps the
// measured layer's quantizers in SqnrProbes (quant/modules/sqnr_probe.h) and evaluates it on the
// subset, with the quantizer statistics frozen. Every measurement starts from the same float
// weights and the same calibration batches, so layers are compared on equal terms.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/evaluate.h"
#include "cli/pretrained.h"
#include "cli/qat_setup.h"
#include "cli/train_config.h"
#include "core/device.h"
#include "nn/data/dataset.h"

namespace qgrad::cli {

struct LayerMeasurement {
  EvalResult result;                                    // on the test subset
  std::vector<std::pair<std::string, double>> sqnr_db;  // by role: weight, input (input0, input1
                                                        // for an add); +inf: no noise
  QuantizedLayers layers;                               // what was quantized
};

class SensitivityBench {
 public:
  // `config` is the float model's (float_checkpoint_config with the command's overrides);
  // `test_images` the size of the test subset (its first images); `device` where the models are
  // calibrated and evaluated (the caller has checked that the recipe's quantizers run there).
  SensitivityBench(TrainConfig config, PretrainedFile file, std::int64_t test_images,
                   Device device = kCPU);

  const TrainConfig& config() const { return config_; }
  std::size_t test_images() const { return test_->size(); }
  std::size_t train_images() const { return train_->size(); }

  // The float model's accuracy on the subset.
  EvalResult evaluate_float() const;
  // The model quantized with `recipe` (a recipe JSON that calibrates: ptq_recipe's), every
  // quantizable layer, or only `only_layer` (a qualified name quantize_model would replace);
  // SQNRs are measured for `only_layer` only.
  LayerMeasurement measure(const nlohmann::json& recipe, const std::string& only_layer = "") const;

 private:
  std::shared_ptr<nn::UnaryModule> float_model() const;

  TrainConfig config_;
  PretrainedFile file_;
  Device device_;
  std::shared_ptr<const data::Dataset> train_, test_;
};

}  // namespace qgrad::cli
