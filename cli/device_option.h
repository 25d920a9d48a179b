// The device a command runs its model on (train's "device" and --device, ptq's and eval's
// --device): the name parsed as Device::parse reads it, then, off the CPU, the quantizers of the
// quantized model asked whether they run there (quant::quantizers_not_on) and the GPU looked for,
// each a usage error (exit 2) that says what to do, raised before the command's real work.
#pragma once

#include <string>

#include "cli/train_config.h"
#include "core/device.h"
#include "nn/module.h"
#include "quant/modules/quant_recipe.h"

namespace qgrad::cli {

// `name` as a device; UsageError "<what>: ..." when it names none.
Device parse_device(const std::string& what, const std::string& name);

// UsageError when `device` is a GPU this process does not see (or this build has no CUDA).
void require_visible(const std::string& what, Device device);

// UsageError naming the first quantizers of `quantized` that do not run on `device` (none on the
// CPU), then require_visible. `what` starts the message ("device \"cuda\"").
void require_runs_on(const std::string& what, Device device, nn::Module& quantized);

// The same for the model `config` builds, quantized by `recipe` (a probe, built and quantized
// only to ask its quantizers, before anything is loaded).
void require_recipe_runs_on(const std::string& what, Device device, const TrainConfig& config,
                            const quant::QuantRecipe& recipe);

}  // namespace qgrad::cli
