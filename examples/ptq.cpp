// Post-training quantization from C++, the flow of `qgrad ptq` with the library alone: train
// LeNet-5 with batch norm in float for a few hundred steps on Fashion-MNIST, then, for max and
// for entropy calibration, quantize a copy of the float model with the nvidia_int8 named recipe
// (quant::quantize_model), calibrate it on a few training batches (quant::calibrate_model) and
// evaluate it with its quantizer statistics frozen, next to the float accuracy. With --out DIR
// the quantized models are saved as DIR/ptq_<method>.safetensors (plain state in a checkpoint;
// `qgrad ptq` also stores the config and recipe that `qgrad eval` needs to rebuild the model).
// The program exits 1 when a quantized model loses more than 5 points of accuracy (an 8-bit
// recipe loses far less), and 77 (skipped under ctest) when the dataset is not installed.
//
//   ./build/examples/ptq [--data-dir D] [--train-steps N] [--calibration-batches N] [--out DIR]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "qgrad.h"

using namespace qgrad;
using nlohmann::json;

namespace {

// Fashion-MNIST's mean and standard deviation, as `qgrad train` normalises.
std::vector<std::shared_ptr<const data::Transform>> normalise() {
  return {
      std::make_shared<data::Normalize>(std::vector<double>{0.2860}, std::vector<double>{0.3530})};
}

// Test accuracy; the quantizers' statistics stay frozen, so evaluating changes nothing.
double accuracy(nn::UnaryModule& model, const std::shared_ptr<data::MNIST>& test_set) {
  NoGradGuard no_grad;
  model.eval();
  quant::FrozenQuantizerStatistics frozen(model);
  data::DataLoader loader(test_set, data::DataLoaderOptions().batch_size(1000), normalise());
  std::int64_t correct = 0, count = 0;
  while (std::optional<data::Batch> b = loader.next()) {
    const std::vector<std::int64_t> pred =
        argmax(model.forward(b->data), 1).to_vector<std::int64_t>();
    const std::vector<std::int64_t> truth = b->target.to_vector<std::int64_t>();
    for (std::size_t i = 0; i < pred.size(); ++i) correct += pred[i] == truth[i];
    count += static_cast<std::int64_t>(pred.size());
  }
  return static_cast<double>(correct) / static_cast<double>(count);
}

std::int64_t count_arg(const char* option, const char* text) {
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (*end != '\0' || v < 1 || v > 1000000) {
    std::fprintf(stderr, "ptq: %s must be an integer in [1, 1000000], got '%s'\n", option, text);
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data_dir = "/usr/share/datasets/fashion-mnist", out_dir;
  std::int64_t train_steps = 300, calibration_batches = 8;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "ptq: %s needs a value (or is unknown)\n", a.c_str());
      return 2;
    }
    if (a == "--data-dir")
      data_dir = argv[++i];
    else if (a == "--train-steps")
      train_steps = count_arg("--train-steps", argv[++i]);
    else if (a == "--calibration-batches")
      calibration_batches = count_arg("--calibration-batches", argv[++i]);
    else if (a == "--out")
      out_dir = argv[++i];
    else {
      std::fprintf(stderr, "ptq: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  std::shared_ptr<data::MNIST> train_set, test_set;
  try {
    train_set = std::make_shared<data::MNIST>(data_dir, data::Split::Train);
    test_set = std::make_shared<data::MNIST>(data_dir, data::Split::Test);
  } catch (const IOError& e) {
    std::printf("skipped: no Fashion-MNIST in %s (%s)\n", data_dir.c_str(), e.what());
    return 77;
  }

  // 1. A float model: SGD on shuffled, normalised training batches.
  std::shared_ptr<nn::UnaryModule> float_model = nn::make_model("lenet5bn", 0);
  {
    optim::SGD sgd(float_model->parameters(),
                   optim::SGDOptions(0.05).momentum(0.9).weight_decay(5e-4));
    data::DataLoader loader(train_set, data::DataLoaderOptions().batch_size(128).shuffle(true),
                            normalise());
    float_model->train();
    for (std::int64_t step = 0; step < train_steps; ++step) {
      std::optional<data::Batch> b = loader.next();
      if (!b) b = loader.next();  // the next epoch
      Tensor loss = cross_entropy(float_model->forward(b->data), b->target);
      sgd.zero_grad();
      loss.backward();
      sgd.step();
    }
  }
  const double float_acc = accuracy(*float_model, test_set);
  std::printf("float lenet5bn after %lld steps: test accuracy %.2f%%\n",
              static_cast<long long>(train_steps), 100 * float_acc);

  // 2. PTQ with two calibration methods, each on a fresh copy of the float weights.
  bool ok = true;
  for (const std::string method : {"max", "entropy"}) {
    json recipe_json{{"recipe", "nvidia_int8"},
                     {"calibration", {{"batches", calibration_batches}}}};
    if (method != "max") {  // histogram calibration of the layer inputs; weights keep max
      recipe_json["input"] = {{"calib_method", "histogram"}};
      recipe_json["calibration"]["method"] = method;
    }
    const quant::QuantRecipe recipe = quant::QuantRecipe::from_json(recipe_json);
    std::shared_ptr<nn::UnaryModule> model = nn::make_model("lenet5bn", 0);
    model->load_state_dict(float_model->state_dict());
    const std::vector<std::string> layers = quant::quantize_model(*model, recipe);
    data::DataLoader calibration(
        train_set, data::DataLoaderOptions().batch_size(128).shuffle(true).seed(1), normalise());
    const std::size_t quantizers = quant::calibrate_model(
        *model, recipe.calibration_batches(),
        [&](std::int64_t) { model->forward(calibration.next()->data); },
        recipe.calibration_options());
    const double acc = accuracy(*model, test_set);
    std::printf(
        "PTQ int8, %-7s calibration: %zu layers, %zu quantizers on %lld batches: test "
        "accuracy %.2f%% (%+.2f points)\n",
        method.c_str(), layers.size(), quantizers,
        static_cast<long long>(recipe.calibration_batches()), 100 * acc, 100 * (acc - float_acc));
    if (acc < float_acc - 0.05) {
      std::printf("  error: more than 5 points below the float model\n");
      ok = false;
    }
    if (!out_dir.empty()) {
      std::filesystem::create_directories(out_dir);
      const std::string path = out_dir + "/ptq_" + method + ".safetensors";
      serialize::save_checkpoint(path, *model, nullptr, nullptr, 0, 0,
                                 {{"ptq.recipe", recipe.to_json().dump()}});
      std::printf("  saved %s\n", path.c_str());
    }
  }
  return ok ? 0 : 1;
}
