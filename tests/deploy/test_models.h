// Models for the deploy tests (ONNX export, ONNX Runtime): zoo models with non-trivial batch-norm
// statistics, and QAT models quantized by a recipe and calibrated (nvidia, AIMET) or observed
// (torch.ao, LSQ, Horizon) on one seeded batch, in eval mode.
#pragma once

#include <memory>
#include <string>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "nn/models/zoo.h"
#include "nn/modules/batchnorm.h"
#include "ops/binary/binary.h"
#include "quant/modules/calibrate.h"
#include "quant/modules/quant_recipe.h"
#include "quant/modules/quantize_model.h"

namespace qgrad_test {

using namespace qgrad;

// Gives every BatchNorm2d non-trivial running statistics and affine parameters.
inline void randomise_bn(nn::Module& model) {
  Generator gen(7);
  for (const auto& item : model.named_modules()) {
    auto* bn = dynamic_cast<nn::BatchNorm2d*>(item.value.get());
    if (bn == nullptr) continue;
    const std::int64_t c = bn->options().num_features_;
    bn->running_mean().detach().copy_(randn({c}, gen) * 0.1);
    bn->running_var().detach().copy_(rand({c}, gen) + 0.5);
    bn->weight().detach().copy_(rand({c}, gen) + 0.5);
    bn->bias().detach().copy_(randn({c}, gen) * 0.1);
  }
}

// `name` built for `input` images (the zoo's default 1x28x28), observed or calibrated on a batch
// of `batch` of them.
inline std::shared_ptr<nn::UnaryModule> qat_model(const std::string& name,
                                                  const std::string& recipe,
                                                  const nn::ImageShape& input = {},
                                                  std::int64_t batch = 8) {
  auto model = nn::make_model(name, 1, input);
  randomise_bn(*model);
  const quant::QuantRecipe r = quant::QuantRecipe::parse(recipe);
  quant::quantize_model(*model, r);
  Generator gen(3);
  const Tensor x = randn({batch, input.channels, input.height, input.width}, gen);
  if (r.family() == quant::QuantFamily::NVIDIA || r.family() == quant::QuantFamily::AIMET) {
    if (r.calibration_batches() == 0) return model;
    quant::calibrate_model(
        *model, 1, [&](std::int64_t) { model->forward(x); }, r.calibration_options());
  } else {
    NoGradGuard no_grad;
    model->forward(x);  // torch.ao: the observers choose scale and zero point
  }
  model->eval();
  return model;
}

}  // namespace qgrad_test
