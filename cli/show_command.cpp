// `qgrad show`: see show_command.h.
#include "cli/show_command.h"

#include <optional>
#include <ostream>

#include "cli/command_options.h"
#include "cli/eval_setup.h"
#include "cli/qat_setup.h"
#include "cli/recipe_argument.h"
#include "cli/train_config.h"
#include "cli/training_factory.h"
#include "cli/usage_error.h"
#include "quant/modules/calibratable.h"
#include "quant/modules/quantizer_device.h"

namespace qgrad::cli {

std::string show_usage() {
  return "usage: qgrad show --checkpoint FILE\n"
         "       qgrad show --config FILE.json\n"
         "       qgrad show --model NAME [--recipe RECIPE]\n"
         "\n"
         "Prints a model as PyTorch's print(model) does: every module with its settings and,\n"
         "in a quantized model, every quantizer with its bits, granularity (per tensor or the\n"
         "channel axis) and state (amax, or scale and zero point; enabled or not), then the\n"
         "number of parameters and of quantizers.\n"
         "\n"
         "  --checkpoint FILE  a checkpoint of qgrad train or qgrad ptq, with its trained and\n"
         "                     calibrated state\n"
         "  --config FILE.json the model a training config builds, quantized by its \"quant\"\n"
         "                     recipe, before calibration and training\n"
         "  --model NAME       a zoo model (lenet5bn, vggfm, resnet20/32/56, resnet18,\n"
         "                     resnet18_cifar, mobilenet_v2, mobilenet_v2_cifar), float,\n"
         "                     or quantized by --recipe RECIPE (a name from qgrad recipes,\n"
         "                     or a recipe's JSON)\n";
}

namespace {

// The model a config builds, quantized by its recipe (no calibration, no pretrained weights).
std::shared_ptr<nn::UnaryModule> configured_model(const TrainConfig& config,
                                                  std::string& quantized) {
  std::shared_ptr<nn::UnaryModule> model = build_model(config);
  if (config.quant)
    quantized =
        ", quantized " + quantize_for_training(*model, *config.quant).family + ", not calibrated";
  return model;
}

void print_model(const std::string& what, nn::Module& model, std::ostream& out) {
  std::int64_t parameters = 0;
  for (const Tensor& p : model.parameters()) parameters += p.numel();
  // The quantization modules, each once: not an observer inside its fake quantizer.
  std::int64_t quantizers = 0;
  std::string inside = "\n";  // "NAME." of the last one counted
  for (const auto& item : model.named_modules()) {
    if (item.key.rfind(inside, 0) == 0 ||
        dynamic_cast<const quant::RunsOn*>(item.value.get()) == nullptr)
      continue;
    ++quantizers;
    inside = item.key + ".";
  }
  out << what << "\n" << model << "\n" << parameters << " parameters";
  if (quantizers > 0) out << ", " << quantizers << " quantizers";
  out << "\n";
}

}  // namespace

int show_command(const std::vector<std::string>& args, std::ostream& out) {
  const auto options =
      parse_command_options("show", args, {"--checkpoint", "--config", "--model", "--recipe"});
  if (!options) {
    out << show_usage();
    return 0;
  }
  std::string checkpoint, config_path, model_name, recipe;
  for (const auto& [name, value] : *options) {
    if (name == "--checkpoint") checkpoint = value;
    if (name == "--config") config_path = value;
    if (name == "--model") model_name = value;
    // An empty value printed the float model, as if no recipe were given; ptq refuses it too.
    if (name == "--recipe" && value.empty()) throw UsageError("show: --recipe must not be empty");
    if (name == "--recipe") recipe = value;
  }
  const int sources = !checkpoint.empty() + !config_path.empty() + !model_name.empty();
  if (sources != 1)
    throw UsageError("show: give exactly one of --checkpoint, --config and --model");
  if (!recipe.empty() && model_name.empty())
    throw UsageError("show: --recipe goes with --model (a checkpoint or config has its own)");

  if (!checkpoint.empty()) {
    const EvalSetup s = load_checkpoint_model("show", checkpoint);
    print_model(checkpoint + ": " + s.config.model + s.quantized, *s.model, out);
    return 0;
  }
  nlohmann::json j = nlohmann::json::object();
  if (!model_name.empty()) {
    j["model"] = model_name;
    if (!recipe.empty()) {
      // A named recipe, a JSON file or inline JSON, read as every command reads --recipe.
      try {
        j["quant"] = read_recipe_argument(recipe, "show");
      } catch (const UsageError& e) {
        throw UsageError("show: --recipe is neither a recipe name nor valid JSON: " + recipe +
                         " (" + e.what() + ")");
      }
    }
  }
  TrainConfig config;
  try {
    config = config_path.empty() ? parse_train_config(j) : load_train_config(config_path);
  } catch (const ValueError& e) {
    throw UsageError(std::string("show: ") + e.what());
  }
  std::string quantized;
  const auto model = configured_model(config, quantized);
  print_model(
      (config_path.empty() ? std::string("") : config_path + ": ") + config.model + quantized,
      *model, out);
  return 0;
}

}  // namespace qgrad::cli
