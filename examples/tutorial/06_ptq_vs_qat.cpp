// Tutorial chapter 6 (docs/tutorial.md): post-training quantization (PTQ) against
// quantization-aware training (QAT) on a tiny model. A small conv net is trained in float on a
// synthetic 4-class problem (each class a fixed random 8x8 pattern under heavy noise, made here,
// so nothing is downloaded). Two copies are then converted with quantize_model by one recipe
// (pytorch_quantization's family: 3-bit per-channel weights, 4-bit inputs, and a per-layer
// "layers" rule that keeps the first layer at 8 bits) and calibrated with calibrate_model. PTQ
// stops there; QAT trains the quantized copy for a few steps through the straight-through
// estimator. The example checks the per-layer bit widths by counting the levels of every
// quantized weight, that PTQ costs loss against float, and that QAT wins part of it back; any
// failed check makes it exit with status 1. It runs in well under a second.
#include <cstdio>
#include <memory>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "qgrad.h"
#include "tutorial_check.h"

using namespace qgrad;

namespace {

std::shared_ptr<nn::Sequential> make_model(Generator& gen) {
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(1, 4, 3).padding(1), gen));
  m->push_back(std::make_shared<nn::ReLU>());
  m->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(4, 4, 3).padding(1), gen));
  m->push_back(std::make_shared<nn::ReLU>());
  m->push_back(std::make_shared<nn::Flatten>());
  m->push_back(std::make_shared<nn::Linear>(4 * 8 * 8, 4, gen));
  return m;
}

// Mean cross-entropy and accuracy of the model on (x, labels), without gradient.
std::pair<double, double> evaluate(nn::Sequential& model, const Tensor& x, const Tensor& labels) {
  NoGradGuard no_grad;
  Tensor logits = model.forward(x);
  const double loss = cross_entropy(logits, labels).item<double>();
  const double acc = mean(eq(argmax(logits, 1), labels).to(DType::Float32)).item<double>();
  return {loss, acc};
}

// Full-batch SGD steps.
void train(nn::Sequential& model, const Tensor& x, const Tensor& labels, int steps, double lr) {
  model.train();
  optim::SGD sgd(model.parameters(), optim::SGDOptions(lr).momentum(0.9));
  for (int i = 0; i < steps; ++i) {
    sgd.zero_grad();
    cross_entropy(model.forward(x), labels).backward();
    sgd.step();
  }
  model.eval();
}

// The largest number of distinct values in one output channel of a layer's quantized weight.
std::size_t levels_per_channel(const nn::Module& layer) {
  std::shared_ptr<nn::UnaryModule> quantizer;
  Tensor w;
  if (auto* conv = dynamic_cast<const quant::QuantConv2d*>(&layer)) {
    quantizer = conv->weight_quantizer();
    w = conv->weight();
  } else if (auto* fc = dynamic_cast<const quant::QuantLinear*>(&layer)) {
    quantizer = fc->weight_quantizer();
    w = fc->weight();
  }
  if (!quantizer) return 0;
  NoGradGuard no_grad;
  const std::vector<float> q = quantizer->forward(w).to_vector<float>();
  const std::size_t per_channel = q.size() / static_cast<std::size_t>(w.shape()[0]);
  std::size_t most = 0;
  for (std::size_t c = 0; c < q.size(); c += per_channel)
    most = std::max(most, std::set<float>(q.begin() + c, q.begin() + c + per_channel).size());
  return most;
}

}  // namespace

int main() {
  tutorial::Check check;
  Generator gen(0);
  // Synthetic data: each of 4 classes is a fixed random 8x8 pattern, seen through heavy noise.
  Tensor patterns = randn({4, 64}, gen) * 0.3;
  auto make_data = [&](std::int64_t n) {
    Tensor labels = randint(0, 4, {n}, gen);
    Tensor one_hot = eq(labels.reshape({n, 1}), arange(4, TensorOptions().dtype(DType::Int64)))
                         .to(DType::Float32);
    return std::make_pair(
        matmul(one_hot, patterns).reshape({n, 1, 8, 8}) + randn({n, 1, 8, 8}, gen), labels);
  };
  Tensor x_train, y_train, x_test, y_test;
  std::tie(x_train, y_train) = make_data(1024);
  std::tie(x_test, y_test) = make_data(256);

  auto float_model = make_model(gen);
  train(*float_model, x_train, y_train, 60, 0.05);
  const auto [float_loss, float_acc] = evaluate(*float_model, x_test, y_test);

  // [tutorial:recipe]
  const nlohmann::json recipe = {
      {"family", "nvidia"},  // pytorch_quantization: max calibration, symmetric grids
      {"weight", {{"num_bits", 3}, {"axis", 0}}},  // per output channel
      {"input", {{"num_bits", 4}}},                // per tensor
      {"layers", {{"@first", {{"weight", {{"num_bits", 8}}}, {"input", {{"num_bits", 8}}}}}}}};
  // [/tutorial:recipe]

  // [tutorial:ptq]
  auto ptq_model = make_model(gen);
  ptq_model->load_state_dict(float_model->state_dict());  // the trained float weights
  const std::vector<std::string> replaced = quant::quantize_model(*ptq_model, recipe);
  quant::calibrate_model(*ptq_model, 4, [&](std::int64_t i) {  // 4 batches of 64 images
    ptq_model->forward(x_train.slice(0, i * 64, (i + 1) * 64));
  });
  ptq_model->eval();
  // [/tutorial:ptq]
  const auto [ptq_loss, ptq_acc] = evaluate(*ptq_model, x_test, y_test);

  // [tutorial:qat]
  auto qat_model = make_model(gen);
  qat_model->load_state_dict(float_model->state_dict());
  quant::quantize_model(*qat_model, recipe);
  quant::calibrate_model(*qat_model, 4, [&](std::int64_t i) {
    qat_model->forward(x_train.slice(0, i * 64, (i + 1) * 64));
  });
  train(*qat_model, x_train, y_train, 30, 0.01);  // the same loop as in float
  // [/tutorial:qat]
  const auto [qat_loss, qat_acc] = evaluate(*qat_model, x_test, y_test);

  std::printf("quantized layers:");
  for (const std::string& name : replaced) std::printf(" %s", name.c_str());
  std::printf("\n%-28s %10s %10s\n", "test set", "loss", "accuracy");
  std::printf("%-28s %10.4f %10.3f\n", "float (60 steps)", float_loss, float_acc);
  std::printf("%-28s %10.4f %10.3f\n", "PTQ (calibrated)", ptq_loss, ptq_acc);
  std::printf("%-28s %10.4f %10.3f\n", "QAT (calibrated + 30 steps)", qat_loss, qat_acc);

  // The per-layer rule: layer "0" has 8-bit weights, "2" and "5" 3-bit ones (at most 2^3 levels
  // per output channel; the first layer's 9 weights per channel can take 9 distinct values).
  const std::size_t first = levels_per_channel(*(*qat_model)[0]);
  const std::size_t second = levels_per_channel(*(*qat_model)[2]);
  const std::size_t last = levels_per_channel(*(*qat_model)[5]);
  std::printf("levels per output channel: layer 0 %zu, layer 2 %zu, layer 5 %zu\n", first, second,
              last);
  check.that("quantize_model replaced the three layers", replaced.size() == 3);
  check.that("the first layer keeps more than 2^3 levels (8 bits)", first > 8);
  check.that("the other layers have at most 2^3 levels (3 bits)", second <= 8 && last <= 8);
  check.that("PTQ at 3 bits costs loss against float", ptq_loss > float_loss);
  check.that("a few QAT steps win part of it back", qat_loss < ptq_loss);
  return check.exit_code();
}
