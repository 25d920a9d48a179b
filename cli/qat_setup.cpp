// Quantizing and calibrating the model of a TrainConfig, and describing what was done.
#include "cli/qat_setup.h"

#include <chrono>
#include <cstdio>

#include "cli/training_factory.h"
#include "cli/usage_error.h"
#include "nn/data/dataloader.h"
#include "quant/modules/calibrate.h"
#include "quant/modules/quantize_model.h"

namespace qgrad::cli {

namespace {

// "weight num_bits=8, input num_bits=8": the settings of a layer that differ from the recipe's
// top-level ones ("weight float" for a role the rules leave float); an Add shows its input only.
// `top` is the recipe's to_json().
std::string describe_overrides(const nlohmann::json& top,
                               const quant::QuantRecipe::LayerQuantizers& layer, bool is_add) {
  std::string s;
  for (const char* role : {"weight", "input"}) {
    if (is_add && std::string(role) == "weight") continue;  // an Add has inputs only
    const std::optional<quant::QuantizerSettings>& settings =
        std::string(role) == "weight" ? layer.weight : layer.input;
    // As the recipe's JSON writes them, for the message.
    const nlohmann::json mine =
        settings ? quant::quantizer_settings_json(*settings) : nlohmann::json();
    const nlohmann::json& base = top.at(role);
    std::string d;
    if (mine.is_null()) {
      if (!base.is_null()) d = "float";
    } else {
      for (auto it = mine.begin(); it != mine.end(); ++it)
        if (!base.is_object() || !base.contains(it.key()) || base.at(it.key()) != it.value())
          d += (d.empty() ? "" : " ") + it.key() + "=" + it.value().dump();
    }
    if (!d.empty()) s += (s.empty() ? "" : ", ") + std::string(role) + " " + d;
  }
  return s.empty() ? "as the recipe" : s;
}

}  // namespace

QuantizedLayers quantize_for_training(nn::Module& model, const quant::QuantRecipe& recipe) {
  QuantizedLayers q;
  q.family = quant::quant_family_name(recipe.family());
  try {
    // What the "layers" rules change, per layer, before the layers are replaced.
    if (!recipe.layer_rules().empty()) {
      const nlohmann::json top = recipe.to_json();
      for (const quant::QuantizableLayer& l : quant::quantizable_layers(model))
        if (!recipe.layer_rules().matching(l.name, l.position).empty())
          q.overrides[l.name] = describe_overrides(top, recipe.layer(l.name, l.position), l.is_add);
    }
    q.names = quant::quantize_model(model, recipe);
  } catch (const ValueError& e) {  // the recipe does not fit the model ("exclude" names)
    throw UsageError(std::string("quant: ") + e.what());
  }
  const auto modules = model.named_modules();
  for (const std::string& n : q.names) {
    const std::shared_ptr<nn::Module>* m = modules.find(n);
    q.types.push_back(m != nullptr ? (*m)->name() : "?");
  }
  return q;
}

std::string describe(const QuantizedLayers& layers) {
  // A fused pair (QuantConvBn2d, then the Identity in the batch norm's place) is one layer.
  std::vector<std::string> entries;
  for (std::size_t i = 0; i < layers.names.size(); ++i) {
    std::string e = layers.names[i] + " (" + layers.types[i];
    if (const auto o = layers.overrides.find(layers.names[i]); o != layers.overrides.end())
      e += "; " + o->second;
    if (layers.types[i] == "QuantConvBn2d" && i + 1 < layers.names.size() &&
        layers.types[i + 1] == "Identity")
      e += " with batch norm " + layers.names[++i];
    entries.push_back(e + ")");
  }
  std::string s = layers.family + " recipe, " + std::to_string(entries.size()) +
                  (entries.size() == 1 ? " layer" : " layers") + " quantized";
  for (std::size_t i = 0; i < entries.size(); ++i) s += (i ? ", " : ": ") + entries[i];
  return s;
}

CalibrationReport calibrate_on_training_set(nn::UnaryModule& model,
                                            const quant::QuantRecipe& recipe,
                                            std::shared_ptr<const data::Dataset> train_set,
                                            const TrainConfig& config, Device device,
                                            const distributed::ProcessGroup* group) {
  CalibrationReport r;
  r.batches = recipe.calibration_batches();
  if (r.batches == 0) return r;
  const auto start = std::chrono::steady_clock::now();
  const int ranks = group != nullptr ? group->size() : 1;
  data::DataLoader loader(std::move(train_set),
                          data::DataLoaderOptions()
                              .batch_size(config.batch_size)
                              .shuffle(true)
                              .prefetch(background_loading(config))
                              .workers(static_cast<int>(config.data.workers))
                              .seed(static_cast<std::uint64_t>(config.seed))
                              .shard(group != nullptr ? group->rank() : 0, ranks),
                          build_eval_transforms(config));
  r.quantizers = quant::calibrate_model(
      model, r.batches,
      [&](std::int64_t) {
        std::optional<data::Batch> b = loader.next();
        if (!b) b = loader.next();               // the end of an epoch: go on with the next one
        r.images += b->data.shape()[0] * ranks;  // every rank reads as many
        model.forward(device.is_cpu() ? b->data : b->data.to(device));
      },
      recipe.calibration_options());
  r.time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::string describe(const CalibrationReport& report, const quant::QuantRecipe& recipe) {
  if (report.batches == 0)
    return std::string("no calibration (quant.calibration.batches = 0)") +
           (recipe.family() == quant::QuantFamily::TorchAO ||
                    recipe.family() == quant::QuantFamily::Horizon
                ? ": the observers start from the first training batch"
            : recipe.family() == quant::QuantFamily::LSQ
                ? ": the step sizes are initialised from the first training batch"
            : recipe.family() == quant::QuantFamily::NVIDIA
                ? ": quantizers without an amax use each batch's own (dynamic) amax"
                : "");
  char time[32];
  std::snprintf(time, sizeof time, "%.1f", report.time_s);
  return "calibrated " + std::to_string(report.quantizers) + " quantizers on " +
         std::to_string(report.batches) +
         (report.batches == 1 ? " training batch (" : " training batches (") +
         std::to_string(report.images) + " images, no augmentation) in " + time + " s";
}

}  // namespace qgrad::cli
