/// @file
/// Calibration of a quantized model: every quantizer module in the tree that implements
/// Calibratable (calibratable.h) is switched to gathering statistics, the caller's batches run
/// without gradient, and each quantizer then fixes its parameters and goes back to quantizing.
/// The model runs in eval mode during calibration (batch norm uses and keeps its running
/// statistics) and gets its previous train/eval mode back afterwards. Errors name the quantizer
/// ("calibrate_model: quantizer '1._input_quantizer': ...").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nn/module.h"
#include "quant/modules/calibratable.h"

namespace qgrad::quant {

/// Qualified names of the calibratable quantizers of the model, in tree order.
std::vector<std::string> calibratable_names(const nn::Module& model);

/// Calls start_calibration() on every Calibratable quantizer of model, in tree order.
void start_calibration(nn::Module& model);
/// Calls finish_calibration(options) on every Calibratable quantizer of model; an error is
/// rethrown as a ValueError naming the quantizer.
void finish_calibration(nn::Module& model,
                        const CalibrationOptions& options = CalibrationOptions());

/// start_calibration; run_batch(i) for i in [0, num_batches) under NoGradGuard (it should run
/// one forward pass of the model); finish_calibration. When run_batch throws, the quantizers are
/// finished leniently (strict = false) and the exception propagates. Returns the number of
/// quantizers calibrated. num_batches must be >= 1 (ValueError).
std::size_t calibrate_model(nn::Module& model, std::int64_t num_batches,
                            const std::function<void(std::int64_t)>& run_batch,
                            const CalibrationOptions& options = CalibrationOptions());

}  // namespace qgrad::quant
