// Golden test of each zoo model against its PyTorch twin (tests/fixtures/gen_zoo.py): both
// sides fill the parameters from the same deterministic hash formula, run a training-mode
// forward (dropout off) on the same images (4 1x28x28, or 2 RGB ones of 16x16 to 64x64 for the
// ResNet-18s and MobileNetV2s), cross_entropy and backward; logits, loss, every parameter
// gradient (a strided sample of the large ones plus the L2 norm of each), the updated running
// statistics, the evaluation-mode logits afterwards and those after one SGD step (momentum,
// weight decay) must agree. The MobileNetV2s run in float64 on both sides: their float32 gradients
// are too ill-conditioned to compare (gen_zoo.py's GOLDEN). A sampled gradient element agrees
// within 1e-4 relative or 1e-4 of its tensor's RMS (an element near zero carries the rounding of
// a large accumulation).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/factory.h"
#include "core/npy.h"
#include "nn/models/zoo.h"
#include "nn/modules/dropout.h"
#include "nn/optim/sgd.h"
#include "nn_test_helpers.h"
#include "ops/binary/binary.h"
#include "ops/loss/loss.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"
#include "support/hash_unit.h"

using namespace qgrad;
using qgrad_test::require_close;

namespace {

Tensor load_zoo(const std::string& name) {
  return qgrad_test::load_fixture("zoo", name);
}

constexpr std::int64_t kSampleLimit = 2048;  // gen_zoo.py's SAMPLE_LIMIT

// gen_zoo.py's param_values (same float32 operations, each exact or correctly rounded).
Tensor param_values(std::uint64_t k, const std::string& name, const Shape& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  std::vector<float> v = qgrad_test::hash_unit(k, n);
  for (float& e : v) e = e * 2.0f - 1.0f;
  if (shape.size() >= 2) {
    const float amp = static_cast<float>(std::sqrt(6.0 / static_cast<double>(n / shape[0])));
    for (float& e : v) e = e * amp;
  } else if (name.size() >= 6 && name.compare(name.size() - 6, 6, "weight") == 0) {
    for (float& e : v) e = 1.0f + 0.25f * e;
  } else {
    for (float& e : v) e = 0.1f * e;
  }
  return from_vector<float>(v, shape);
}

std::vector<float> sample(const Tensor& t) {
  const auto v = t.contiguous().to_vector<float>();
  const std::int64_t n = static_cast<std::int64_t>(v.size());
  const std::int64_t stride = (n + kSampleLimit - 1) / kSampleLimit;
  std::vector<float> out;
  for (std::int64_t i = 0; i < n; i += stride) out.push_back(v[static_cast<std::size_t>(i)]);
  return out;
}

// Logits within 1e-4 relative, or 1e-4 of the largest expected logit (a logit near zero in a deep
// network carries the rounding of the larger ones).
void require_logits(const Tensor& got, const Tensor& want, const char* what) {
  const double scale = amax(abs(want)).item<double>();
  require_close(got, want, 1e-4, std::max(1e-5, 1e-4 * scale), what);
}

// `name`: the fixture prefix; `input`: the batch's fixture (labels zoo_labels or zoo_labels_rgb);
// `dtype`: the model's and input's after the float32 weights are loaded.
void run_golden(const std::string& name, const std::shared_ptr<nn::UnaryModule>& model,
                const std::string& input = "zoo_input", DType dtype = kFloat32) {
  INFO("model " << name);

  // Deterministic weights; the float64 sums confirm both sides generated the same values.
  TensorDict weights("state dict entry");
  std::uint64_t k = 0;
  for (const auto& it : model->named_parameters())
    weights.insert(it.key, param_values(k++, it.key, it.value.shape()));
  const auto result = model->load_state_dict(weights, /*strict=*/false);
  REQUIRE(result.unexpected_keys.empty());
  for (const auto& key : result.missing_keys) {
    const bool is_buffer = key.find("running_") != std::string::npos ||
                           key.find("num_batches_tracked") != std::string::npos;
    REQUIRE(is_buffer);
  }
  const auto wsums = load_zoo(name + "_wsums").to_vector<double>();
  const auto params = model->named_parameters();
  const auto names = params.keys();
  const auto tensors = params.values();
  REQUIRE(wsums.size() == params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    INFO("weights of " << names[i]);
    const double s = sum(tensors[i].to(kFloat64)).item<double>();
    REQUIRE(s == Approx(wsums[i]).epsilon(1e-9).margin(1e-9));
  }

  model->to(dtype);
  const Tensor x = load_zoo(input).to(dtype);
  const Tensor labels = load_zoo(input == "zoo_input" ? "zoo_labels" : "zoo_labels_rgb");
  model->train();
  for (const auto& m : model->modules())  // deterministic: dropout as in evaluation
    if (std::dynamic_pointer_cast<nn::Dropout>(m)) m->eval();
  Tensor logits = model->forward(x);
  require_logits(logits.to(kFloat32), load_zoo(name + "_logits"), "train-mode logits");
  Tensor loss = cross_entropy(logits, labels);
  require_close(loss.to(kFloat32), load_zoo(name + "_loss"), 1e-4, 1e-5, "loss");
  loss.backward();

  const auto ref_grads = load_zoo(name + "_grads").to_vector<float>();
  const auto ref_norms = load_zoo(name + "_grad_norms").to_vector<double>();
  REQUIRE(ref_norms.size() == params.size());
  std::size_t pos = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    INFO("gradient of " << names[i]);
    const Tensor g = tensors[i].grad();
    REQUIRE(g.defined());
    const double norm = std::sqrt(sum(g.to(kFloat64) * g.to(kFloat64)).item<double>());
    REQUIRE(norm == Approx(ref_norms[i]).epsilon(1e-4).margin(1e-6));
    const auto got = sample(g.to(kFloat32));
    const double rms = norm / std::sqrt(static_cast<double>(g.numel()));
    REQUIRE(pos + got.size() <= ref_grads.size());
    for (std::size_t j = 0; j < got.size(); ++j) {
      const double want = ref_grads[pos + j];
      INFO("sampled element " << j << ": " << got[j] << " vs " << want);
      REQUIRE(std::fabs(got[j] - want) <= 1e-5 + 1e-4 * (std::fabs(want) + rms));
    }
    pos += got.size();
  }
  REQUIRE(pos == ref_grads.size());

  // Running statistics after the step (float buffers in order), then eval-mode logits.
  std::vector<float> bufs;
  for (const auto& it : model->named_buffers()) {
    if (!is_floating(it.value.dtype())) {
      REQUIRE(it.value.item<std::int64_t>() == 1);  // num_batches_tracked
      continue;
    }
    const auto v = it.value.to(kFloat32).contiguous().to_vector<float>();
    bufs.insert(bufs.end(), v.begin(), v.end());
  }
  require_close(from_vector<float>(bufs), load_zoo(name + "_buffers"), 1e-4, 1e-5,
                "running statistics");
  model->eval();
  require_logits(model->forward(x).to(kFloat32), load_zoo(name + "_eval_logits"),
                 "eval-mode logits");

  // One SGD step with gen_zoo.py's SGD settings, then evaluation mode again.
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.01).momentum(0.9).weight_decay(5e-4));
  sgd.step();
  require_logits(model->forward(x).to(kFloat32), load_zoo(name + "_sgd_eval_logits"),
                 "eval-mode logits after an SGD step");
}

void run_golden(const std::string& name) {
  run_golden(name, nn::make_model(name, 0));
}

}  // namespace

TEST_CASE("zoo golden: lenet5bn forward, loss and gradients match PyTorch") {
  run_golden("lenet5bn");
}

TEST_CASE("zoo golden: vggfm forward, loss and gradients match PyTorch") {
  run_golden("vggfm");
}

TEST_CASE("zoo golden: resnet20 forward, loss and gradients match PyTorch") {
  run_golden("resnet20");
}

// In float64, as the fixtures: ResNet-32's float32 gradients through 31 train-mode batch norms
// are ill-conditioned (conv1's moved by 0.5% between a GCC and a Clang build).
TEST_CASE("zoo golden: resnet32 forward, loss and gradients match PyTorch") {
  run_golden("resnet32", nn::make_model("resnet32", 0), "zoo_input", kFloat64);
}

TEST_CASE("zoo golden: ResNet-18 with either stem on RGB images matches PyTorch") {
  run_golden("resnet18_cifar", nn::make_model("resnet18_cifar", 0, {3, 32, 32}), "zoo_input_rgb32");
  run_golden("resnet18", nn::make_model("resnet18", 0, {3, 64, 64}), "zoo_input_rgb64");
}

TEST_CASE("zoo golden: MobileNetV2, and its CIFAR variant at width 0.5, match PyTorch") {
  run_golden("mobilenet_v2", nn::make_model("mobilenet_v2", 0, {3, 16, 16}), "zoo_input_rgb16",
             kFloat64);
  Generator gen(0);
  nn::MobileNetV2Options o;
  o.cifar = true;
  o.width_mult = 0.5;
  run_golden("mobilenet_v2_cifar_w050", nn::mobilenet_v2(gen, {3, 16, 16}, 10, o),
             "zoo_input_rgb16", kFloat64);
}
