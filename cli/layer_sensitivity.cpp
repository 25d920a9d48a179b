// SensitivityBench: float model, quantization of all or one layer, calibration, probes and
// evaluation on the test subset.
#include "cli/layer_sensitivity.h"

#include "core/device.h"
#include "nn/data/dataloader.h"
#include "nn/data/mnist.h"
#include "quant/modules/quant_recipe.h"
#include "quant/modules/quantize_model.h"
#include "quant/modules/sqnr_probe.h"

#include "cli/dataset_factory.h"
#include "cli/training_factory.h"

namespace qgrad::cli {

using json = nlohmann::json;

namespace {

// The quantizer children of a quantized layer, by role.
const std::vector<std::pair<std::string, std::string>> kQuantizerChildren{
    {"_weight_quantizer", "weight"},
    {"_input_quantizer", "input"},
    {"_input0_quantizer", "input0"},
    {"_input1_quantizer", "input1"}};

}  // namespace

SensitivityBench::SensitivityBench(TrainConfig config, PretrainedFile file,
                                   std::int64_t test_images, Device device)
    : config_(std::move(config)), file_(std::move(file)), device_(device) {
  train_ = make_dataset(config_.data, data::Split::Train);
  test_ = data::Subset::first(make_dataset(config_.data, data::Split::Test),
                              static_cast<std::size_t>(test_images));
}

std::shared_ptr<nn::UnaryModule> SensitivityBench::float_model() const {
  std::shared_ptr<nn::UnaryModule> model = build_model(config_);
  load_pretrained(*model, config_.model, file_, std::nullopt);
  if (!device_.is_cpu()) model->to(device_);
  return model;
}

EvalResult SensitivityBench::evaluate_float() const {
  auto model = float_model();
  data::DataLoader loader(test_,
                          data::DataLoaderOptions()
                              .batch_size(config_.eval_batch_size)
                              .workers(static_cast<int>(config_.data.workers)),
                          build_eval_transforms(config_));
  return evaluate(*model, loader, device_);
}

LayerMeasurement SensitivityBench::measure(const json& recipe_json,
                                           const std::string& only_layer) const {
  auto model = float_model();
  json r = recipe_json;
  if (!only_layer.empty()) {
    // Only this layer: every other Conv2d, Linear and Add stays float.
    json exclude = json::array();
    for (const quant::QuantizableLayer& l : quant::quantizable_layers(*model))
      if (l.name != only_layer) exclude.push_back(l.name);
    r["exclude"] = exclude;
  }
  const quant::QuantRecipe recipe = quant::QuantRecipe::from_json(r);
  LayerMeasurement m;
  m.layers = quantize_for_training(*model, recipe);
  if (!device_.is_cpu()) model->to(device_);  // the new quantizers
  calibrate_on_training_set(*model, recipe, train_, config_, device_);

  std::vector<std::pair<std::string, std::shared_ptr<quant::SqnrProbe>>> probes;
  if (!only_layer.empty()) {
    const auto modules = model->named_modules();
    const std::shared_ptr<nn::Module>* layer = modules.find(only_layer);
    if (layer != nullptr) {
      const auto children = (*layer)->named_children();
      for (const auto& [child, role] : kQuantizerChildren) {
        const std::shared_ptr<nn::Module>* q = children.find(child);
        auto unary = q ? std::dynamic_pointer_cast<nn::UnaryModule>(*q) : nullptr;
        if (!unary) continue;
        auto probe = std::make_shared<quant::SqnrProbe>(unary);
        (*layer)->replace_module(child, probe);
        probes.emplace_back(role, probe);
      }
    }
  }
  data::DataLoader loader(test_,
                          data::DataLoaderOptions()
                              .batch_size(config_.eval_batch_size)
                              .workers(static_cast<int>(config_.data.workers)),
                          build_eval_transforms(config_));
  m.result = evaluate(*model, loader, device_);
  for (const auto& [role, probe] : probes) m.sqnr_db.emplace_back(role, probe->sqnr_db());
  return m;
}

}  // namespace qgrad::cli
