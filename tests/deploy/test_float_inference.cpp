// deploy::compile_inference (deploy/float_inference) on every zoo model: the compiled float model
// (batch norms folded, ReLU / ReLU6 and residual adds fused, blocked layouts) against the module's
// eval-mode forward on the same random inputs, at batch 1 and a larger batch, with random weights
// and randomised batch-norm statistics (test_models.h). The two differ only by float rounding (the
// folded weights and oneDNN's accumulation order): measured, the largest logit difference is at
// most 6.8e-7 of the largest |logit| (resnet18_cifar, batch 4), so 1e-5 is asserted. Also: the
// input is not written (a residual sum accumulates in place only into the model's own activations),
// a second input shape builds its own primitives, and unsupported modules are errors naming the
// layer.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "deploy/float_inference/compile_inference.h"
#include "deploy/test_models.h"
#include "nn/models/basic_block.h"
#include "nn/modules/activation.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"
#include "nn/modules/flatten.h"
#include "nn/modules/linear.h"
#include "nn/modules/sequential.h"

using namespace qgrad;

namespace {

// max |a - b| / max |b|.
double relative_difference(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const std::vector<float> x = a.contiguous().to_vector<float>();
  const std::vector<float> y = b.contiguous().to_vector<float>();
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    diff = std::max(diff, std::abs(double(x[i]) - double(y[i])));
    scale = std::max(scale, std::abs(double(y[i])));
  }
  return diff / scale;
}

constexpr double kTolerance = 1e-5;

}  // namespace

TEST_CASE("float inference: every zoo model gives the module's eval logits", "[float_inference]") {
  struct Case {
    const char* model;
    nn::ImageShape input;
    std::int64_t batch;
  };
  const Case cases[] = {
      {"lenet5bn", {1, 28, 28}, 16},          {"vggfm", {1, 28, 28}, 16},
      {"resnet20", {3, 32, 32}, 8},           {"resnet32", {3, 16, 16}, 4},
      {"resnet56", {3, 16, 16}, 4},           {"resnet18", {3, 32, 32}, 4},
      {"resnet18_cifar", {3, 16, 16}, 4},     {"mobilenet_v2", {3, 32, 32}, 4},
      {"mobilenet_v2_cifar", {3, 16, 16}, 4},
  };
  for (const Case& c : cases) {
    INFO(c.model);
    auto model = nn::make_model(c.model, 1, c.input);
    qgrad_test::randomise_bn(*model);
    model->eval();
    deploy::FloatInferenceModel compiled = deploy::compile_inference(*model);
    Generator gen(11);
    for (std::int64_t batch : {std::int64_t{1}, c.batch}) {
      INFO("batch " << batch);
      const Tensor x = randn({batch, c.input.channels, c.input.height, c.input.width}, gen);
      NoGradGuard no_grad;
      const Tensor expected = model->forward(x);
      const Tensor got = compiled.forward(x);
      const double d = relative_difference(got, expected);
      UNSCOPED_INFO(c.model << " batch " << batch << ": " << d);
      CHECK(d <= kTolerance);
    }
    for (const auto& info : compiled.implementations()) CHECK_FALSE(info.impl.empty());
  }
}

TEST_CASE("float inference: a block reading the model input leaves it unchanged",
          "[float_inference]") {
  // The BasicBlock's identity shortcut is its input: the fused sum must not accumulate into the
  // caller's tensor.
  Generator gen(3);
  auto net = std::make_shared<nn::Sequential>();
  net->push_back(std::make_shared<nn::BasicBlock>(8, 8, 1, gen));
  qgrad_test::randomise_bn(*net);
  net->eval();
  deploy::FloatInferenceModel compiled = deploy::compile_inference(*net);
  const Tensor x = randn({2, 8, 6, 6}, gen);
  const Tensor copy = x.clone();
  NoGradGuard no_grad;
  const Tensor first = compiled.forward(x);
  CHECK(relative_difference(x, copy) == 0);
  CHECK(relative_difference(compiled.forward(x), first) == 0);
  CHECK(relative_difference(first, net->forward(x)) <= kTolerance);
}

TEST_CASE("float inference: unsupported modules are errors naming the layer", "[float_inference]") {
  Generator gen(5);
  {
    auto net = std::make_shared<nn::Sequential>();
    net->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(1, 4, 3), gen));
    net->push_back(std::make_shared<nn::Sigmoid>());
    CHECK_THROWS_WITH(deploy::compile_inference(*net),
                      Catch::Contains("layer '1' (Sigmoid) has no float inference mapping"));
  }
  {
    auto net = std::make_shared<nn::Sequential>();
    net->push_back(std::make_shared<nn::BatchNorm2d>(1));
    CHECK_THROWS_WITH(deploy::compile_inference(*net),
                      Catch::Contains("layer '0' (BatchNorm2d) has no float inference mapping"));
  }
  {
    auto net = std::make_shared<nn::Sequential>();
    net->push_back(std::make_shared<nn::Flatten>());
    net->push_back(std::make_shared<nn::ReLU>());
    CHECK_THROWS_WITH(deploy::compile_inference(*net),
                      Catch::Contains("layer '0' (Flatten) must be followed by a Linear"));
  }
  // A QAT model is not float: its first quantized layer is named.
  auto qat = qgrad_test::qat_model("lenet5bn", R"({"family": "torch_ao"})");
  CHECK_THROWS_WITH(deploy::compile_inference(*qat),
                    Catch::Contains("layer '0' (QuantConv2d) has no float inference mapping"));
  nn::BasicBlock block(4, 4, 1, gen);
  CHECK_THROWS_WITH(deploy::compile_inference(block),
                    Catch::Contains("the model (BasicBlock) must be a Sequential"));
}
