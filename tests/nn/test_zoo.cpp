// The model zoo: state_dict keys, shapes and dtypes equal to the PyTorch twins' (keys.json from
// tests/fixtures/gen_zoo.py), printouts equal PyTorch's, output shapes, reproducible
// initialisation from a seed, make_model's name lookup, and BasicBlock's structure and child
// replacement.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "nn/models/basic_block.h"
#include "nn/models/zoo.h"
#include "nn/modules/activation.h"
#include "nn/modules/add.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"
#include "nn/modules/identity.h"
#include "nn_test_helpers.h"

using namespace qgrad;
using qgrad_test::require_equal;

namespace {

nlohmann::json load_json(const std::string& file) {
  std::ifstream f(qgrad_test::fixture_path("zoo", file));
  REQUIRE(f.good());
  return nlohmann::json::parse(f);
}

}  // namespace

TEST_CASE("zoo: state_dict keys, shapes and dtypes equal the PyTorch models'") {
  const auto keys = load_json("keys.json");
  REQUIRE(keys.size() == nn::model_names().size());
  for (const auto& name : nn::model_names()) {
    INFO("model " << name);
    auto model = nn::make_model(name, 0);
    const auto sd = model->state_dict();
    const auto& expected = keys.at(name);
    REQUIRE(sd.size() == expected.size());
    for (std::size_t i = 0; i < sd.size(); ++i) {
      const auto& e = expected[i];
      INFO("entry " << i << " " << e.dump());
      REQUIRE(sd.keys()[i] == e[0].get<std::string>());
      REQUIRE(sd.values()[i].shape() == e[1].get<Shape>());
      REQUIRE(dtype_name(sd.values()[i].dtype()) == e[2].get<std::string>());
    }
  }
}

TEST_CASE("zoo: printouts equal PyTorch's") {
  const auto expected = load_json("repr.json");
  for (const auto& name : nn::model_names()) {
    INFO("model " << name);
    REQUIRE(nn::make_model(name, 0)->repr() == expected.at(name).get<std::string>());
  }
}

TEST_CASE("zoo: models map 28x28 images to 10 logits, train and eval") {
  Generator gen(4);
  const Tensor x = rand({2, 1, 28, 28}, gen);
  for (const auto& name : nn::model_names()) {
    INFO("model " << name);
    auto model = nn::make_model(name, 1);
    REQUIRE(model->forward(x).shape() == Shape{2, 10});
    model->eval();
    for (const auto& m : model->modules()) REQUIRE_FALSE(m->is_training());
    REQUIRE(model->forward(x).shape() == Shape{2, 10});
  }
  // Parameter counts of the architectures as specified (the PyTorch twins' numel sums).
  REQUIRE(nn::make_model("lenet5bn", 0)->num_parameters() ==
          150 + 12 + 2400 + 32 + 30840 + 10164 + 850);
  REQUIRE(nn::make_model("vggfm", 0)->num_parameters() ==
          288 + 64 + 9216 + 64 + 18432 + 128 + 36864 + 128 + 401536 + 1290);
  // resnet20 on 1-channel input: stem conv + BN, per stage the first block's conv1 (and 1x1
  // projection), 5 more 3x3 convs, 6 BNs (+1 for the projection), then fc.
  std::int64_t resnet = 16 * 9 + 32;
  resnet += 6 * (16 * 16 * 9 + 32);
  resnet += (32 * 16 * 9 + 64) + 5 * (32 * 32 * 9 + 64) + (32 * 16 + 64);
  resnet += (64 * 32 * 9 + 128) + 5 * (64 * 64 * 9 + 128) + (64 * 32 + 128);
  resnet += 64 * 10 + 10;
  REQUIRE(nn::make_model("resnet20", 0)->num_parameters() == resnet);
}

TEST_CASE("zoo: models build for 3x32x32 images and other class counts") {
  Generator gen(5);
  const Tensor x = rand({2, 3, 32, 32}, gen);
  const nn::ImageShape cifar{3, 32, 32};
  for (const auto& name : nn::model_names()) {
    INFO("model " << name);
    auto model = nn::make_model(name, 1, cifar, 100);
    REQUIRE(model->forward(x).shape() == Shape{2, 100});
    model->eval();
    REQUIRE(model->forward(x).shape() == Shape{2, 100});
    // A grey, non-square input and 20 classes.
    REQUIRE(nn::make_model(name, 1, {1, 20, 36}, 20)->forward(rand({1, 1, 20, 36}, gen)).shape() ==
            Shape{1, 20});
  }
  // The flatten sizes: 16 x 5 x 5 and 64 x 8 x 8.
  const auto lenet = nn::make_model("lenet5bn", 0, cifar)->state_dict();
  REQUIRE(lenet.find("9.weight")->shape() == Shape{120, 400});
  REQUIRE(lenet.find("0.weight")->shape() == Shape{6, 3, 5, 5});
  REQUIRE(nn::make_model("vggfm", 0, cifar)->state_dict().find("15.weight")->shape() ==
          Shape{128, 4096});
  REQUIRE(nn::make_model("resnet20", 0, cifar)->state_dict().find("conv1.weight")->shape() ==
          Shape{16, 3, 3, 3});
  // Too small, or nothing to build for.
  REQUIRE_THROWS_WITH(nn::make_model("lenet5bn", 0, {1, 15, 28}), Catch::Contains("lenet5bn") &&
                                                                      Catch::Contains("15x28") &&
                                                                      Catch::Contains("too small"));
  REQUIRE_THROWS_AS(nn::make_model("vggfm", 0, {1, 3, 3}), ValueError);
  REQUIRE_THROWS_AS(nn::make_model("resnet20", 0, {0, 32, 32}), ValueError);
  REQUIRE_THROWS_AS(nn::make_model("resnet20", 0, {3, 32, 32}, 0), ValueError);
}

TEST_CASE("zoo: the same seed builds the same model, another seed a different one") {
  for (const auto& name : nn::model_names()) {
    INFO("model " << name);
    const auto a = nn::make_model(name, 77)->state_dict();
    const auto b = nn::make_model(name, 77)->state_dict().values();
    const auto c = nn::make_model(name, 78)->state_dict().values();
    const auto av = a.values();
    const auto keys = a.keys();
    for (std::size_t i = 0; i < av.size(); ++i) require_equal(av[i], b[i], keys[i]);
    REQUIRE(av[0].to_vector<float>() != c[0].to_vector<float>());
    // Layers draw from one stream: no two weight tensors of equal shape are identical.
    const auto p = nn::make_model(name, 77)->parameters();
    for (std::size_t i = 0; i < p.size(); ++i)
      for (std::size_t j = i + 1; j < p.size(); ++j)
        if (p[i].dim() >= 2 && p[i].shape() == p[j].shape())
          REQUIRE(p[i].to_vector<float>() != p[j].to_vector<float>());
  }
}

TEST_CASE("zoo: make_model rejects unknown names, listing the valid ones") {
  REQUIRE_THROWS_AS(nn::make_model("resnet18", 0), ValueError);
  REQUIRE_THROWS_WITH(nn::make_model("resnet18", 0),
                      Catch::Contains("make_model") && Catch::Contains("resnet18") &&
                          Catch::Contains("lenet5bn") && Catch::Contains("vggfm") &&
                          Catch::Contains("resnet20"));
  REQUIRE(nn::model_names() == std::vector<std::string>{"lenet5bn", "vggfm", "resnet20"});
}

TEST_CASE("zoo: BasicBlock shortcut, residual add and child replacement") {
  Generator gen(2);
  nn::BasicBlock same(8, 8, 1, gen);
  REQUIRE(same.downsample() == nullptr);
  REQUIRE(same.named_children().keys() ==
          std::vector<std::string>{"conv1", "bn1", "relu1", "conv2", "bn2", "add", "relu2"});
  nn::BasicBlock down(8, 16, 2, gen);
  REQUIRE(down.downsample() != nullptr);
  REQUIRE(down.named_children().keys() == std::vector<std::string>{"conv1", "bn1", "relu1", "conv2",
                                                                   "bn2", "downsample", "add",
                                                                   "relu2"});
  const Tensor x = randn({2, 8, 6, 6}, gen);
  REQUIRE(down(x).shape() == Shape{2, 16, 3, 3});

  // Identity shortcut: with conv2's weight zeroed, bn2 outputs its bias (0), so the block is
  // relu(x) exactly.
  {
    NoGradGuard ng;
    auto conv2 = std::dynamic_pointer_cast<nn::Conv2d>(same.conv2());
    REQUIRE(conv2 != nullptr);
    Tensor w = conv2->weight();
    w.zero_();
  }
  same.eval();
  Tensor y = same(x);
  const auto xv = x.to_vector<float>(), yv = y.to_vector<float>();
  for (std::size_t i = 0; i < xv.size(); ++i) REQUIRE(yv[i] == std::max(xv[i], 0.0f));

  // Swapping a child updates what forward uses; a non-unary replacement is refused.
  same.replace_module("relu2", std::make_shared<nn::Identity>());
  y = same(x);
  REQUIRE(y.to_vector<float>() == xv);
  REQUIRE_THROWS_AS(same.replace_module("add", std::make_shared<nn::ReLU>()), ValueError);
  REQUIRE_THROWS_AS(same.replace_module("conv1", std::make_shared<nn::Add>()), ValueError);
}
