// The model zoo: state_dict keys, shapes and dtypes equal to the PyTorch twins' (keys.json from
// tests/fixtures/gen_zoo.py), printouts equal PyTorch's, output shapes, reproducible
// initialisation from a seed, make_model's name lookup, BasicBlock's and InvertedResidual's
// structure and child replacement, the CIFAR ResNet depths, ResNet-18's stems and MobileNetV2's
// widths and strides.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "nn/models/basic_block.h"
#include "nn/models/inverted_residual.h"
#include "nn/models/zoo.h"
#include "nn/modules/activation.h"
#include "nn/modules/add.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"
#include "nn/modules/identity.h"
#include "nn_test_helpers.h"
#include "ops/binary/binary.h"

using namespace qgrad;
using qgrad_test::require_equal;

namespace {

nlohmann::json load_json(const std::string& file) {
  std::ifstream f(qgrad_test::fixture_path("zoo", file));
  REQUIRE(f.good());
  return nlohmann::json::parse(f);
}

// ResNet-18 and MobileNetV2 (11.2M and 2.2M parameters) are built as few times as possible.
bool is_large(const std::string& name) {
  return name.rfind("resnet18", 0) == 0 || name.rfind("mobilenet_v2", 0) == 0;
}

}  // namespace

TEST_CASE("zoo: state_dict keys, shapes, dtypes and printouts equal the PyTorch models'") {
  const auto keys = load_json("keys.json");
  const auto reprs = load_json("repr.json");
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
    REQUIRE(model->repr() == reprs.at(name).get<std::string>());
  }
}

TEST_CASE("zoo: models map 28x28 images to 10 logits, train and eval") {
  Generator gen(4);
  const Tensor x = rand({2, 1, 28, 28}, gen);
  std::map<std::string, std::int64_t> params;
  for (const auto& name : nn::model_names()) {
    INFO("model " << name);
    auto model = nn::make_model(name, 1);
    REQUIRE(model->forward(x).shape() == Shape{2, 10});
    model->eval();
    for (const auto& m : model->modules()) REQUIRE_FALSE(m->is_training());
    REQUIRE(model->forward(x).shape() == Shape{2, 10});
    params[name] = model->num_parameters();
  }
  // Parameter counts of the architectures as specified (the PyTorch twins' numel sums).
  REQUIRE(params["lenet5bn"] == 150 + 12 + 2400 + 32 + 30840 + 10164 + 850);
  REQUIRE(params["vggfm"] == 288 + 64 + 9216 + 64 + 18432 + 128 + 36864 + 128 + 401536 + 1290);
  // resnet20 on 1-channel input: stem conv + BN, per stage the first block's conv1 (and 1x1
  // projection), 5 more 3x3 convs, 6 BNs (+1 for the projection), then fc.
  std::int64_t resnet = 16 * 9 + 32;
  resnet += 6 * (16 * 16 * 9 + 32);
  resnet += (32 * 16 * 9 + 64) + 5 * (32 * 32 * 9 + 64) + (32 * 16 + 64);
  resnet += (64 * 32 * 9 + 128) + 5 * (64 * 64 * 9 + 128) + (64 * 32 + 128);
  resnet += 64 * 10 + 10;
  REQUIRE(params["resnet20"] == resnet);
  // Each step of n adds two blocks of each width.
  const std::int64_t two_blocks =
      2 * (16 * 16 * 9 + 32) + 2 * (32 * 32 * 9 + 64) + 2 * (64 * 64 * 9 + 128);
  REQUIRE(params["resnet32"] == resnet + 2 * two_blocks);
  REQUIRE(params["resnet56"] == resnet + 6 * two_blocks);
  // The PyTorch twins' sums; with RGB input and 1000 classes (the stem's 2 more input channels
  // and 990 more fc rows) torchvision's resnet18 and mobilenet_v2: 11,689,512 and 3,504,872.
  REQUIRE(params["resnet18"] == 11175370);
  REQUIRE(params["resnet18_cifar"] == 11172810);
  REQUIRE(params["mobilenet_v2"] == 2236106);
  REQUIRE(params["mobilenet_v2_cifar"] == 2236106);
  REQUIRE(params["resnet18"] + 64 * 2 * 7 * 7 + 990 * (512 + 1) == 11689512);
  REQUIRE(params["mobilenet_v2"] + 32 * 2 * 3 * 3 + 990 * (1280 + 1) == 3504872);
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
    if (is_large(name)) continue;
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
  REQUIRE_THROWS_WITH(nn::make_model("resnet56", 0, {3, 32, 32}, -1), Catch::Contains("resnet56"));
  REQUIRE_THROWS_WITH(nn::make_model("mobilenet_v2_cifar", 0, {3, 0, 32}),
                      Catch::Contains("mobilenet_v2_cifar") && Catch::Contains("too small"));
  REQUIRE_THROWS_WITH(nn::make_model("resnet18_cifar", 0, {0, 32, 32}),
                      Catch::Contains("resnet18_cifar"));
}

TEST_CASE("zoo: the same seed builds the same model, another seed a different one") {
  for (const auto& name : nn::model_names()) {
    INFO("model " << name);
    const auto model = nn::make_model(name, 77);
    if (!is_large(name)) {  // the Generator's determinism, on the small models
      const auto a = model->state_dict();
      const auto b = nn::make_model(name, 77)->state_dict().values();
      const auto c = nn::make_model(name, 78)->state_dict().values();
      const auto av = a.values();
      const auto keys = a.keys();
      for (std::size_t i = 0; i < av.size(); ++i) require_equal(av[i], b[i], keys[i]);
      REQUIRE(av[0].to_vector<float>() != c[0].to_vector<float>());
    }
    // Layers draw from one stream: no two weight tensors of equal shape are identical.
    const auto p = model->parameters();
    for (std::size_t i = 0; i < p.size(); ++i)
      for (std::size_t j = i + 1; j < p.size(); ++j)
        if (p[i].dim() >= 2 && p[i].shape() == p[j].shape())
          REQUIRE(p[i].to_vector<float>() != p[j].to_vector<float>());
  }
}

TEST_CASE("zoo: make_model rejects unknown names, listing the valid ones") {
  REQUIRE_THROWS_AS(nn::make_model("resnet19", 0), ValueError);
  REQUIRE_THROWS_WITH(nn::make_model("resnet19", 0),
                      Catch::Contains("make_model") && Catch::Contains("resnet19") &&
                          Catch::Contains("lenet5bn") && Catch::Contains("vggfm") &&
                          Catch::Contains("resnet20") && Catch::Contains("mobilenet_v2_cifar"));
  REQUIRE(nn::model_names() == std::vector<std::string>{"lenet5bn", "vggfm", "resnet20", "resnet32",
                                                        "resnet56", "resnet18", "resnet18_cifar",
                                                        "mobilenet_v2", "mobilenet_v2_cifar"});
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

TEST_CASE("zoo: cifar_resnet takes the depths 6n + 2, and resnet20 is depth 20") {
  Generator g1(9), g2(9);
  const auto a = nn::resnet20(g1)->state_dict(), b = nn::cifar_resnet(g2, 20)->state_dict();
  REQUIRE(a.keys() == b.keys());
  for (std::size_t i = 0; i < a.size(); ++i)
    require_equal(a.values()[i], b.values()[i], a.keys()[i]);
  Generator gen(1);
  const auto r8 = nn::cifar_resnet(gen, 8, {3, 16, 16}, 5);
  REQUIRE(r8->forward(rand({2, 3, 16, 16}, gen)).shape() == Shape{2, 5});
  REQUIRE(r8->state_dict().contains("layer3.0.downsample.0.weight"));
  REQUIRE_FALSE(r8->state_dict().contains("layer1.1.conv1.weight"));
  REQUIRE(nn::make_model("resnet56", 0)->state_dict().contains("layer3.8.bn2.running_var"));
  REQUIRE_FALSE(nn::make_model("resnet56", 0)->state_dict().contains("layer3.9.conv1.weight"));
  for (int bad : {0, 2, 19, 21, -4})
    REQUIRE_THROWS_WITH(nn::cifar_resnet(gen, bad), Catch::Contains("6n + 2"));
}

TEST_CASE("zoo: ResNet-18's ImageNet and CIFAR stems") {
  Generator gen(3);
  auto imagenet = nn::resnet18(gen, nn::ResNetStem::ImageNet, {3, 64, 64}, 7);
  auto cifar = nn::resnet18(gen, nn::ResNetStem::Cifar, {3, 32, 32}, 7);
  REQUIRE(imagenet->named_children().keys() ==
          std::vector<std::string>{"conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3",
                                   "layer4", "avgpool", "flatten", "fc"});
  REQUIRE(cifar->named_children().keys() ==
          std::vector<std::string>{"conv1", "bn1", "relu", "layer1", "layer2", "layer3", "layer4",
                                   "avgpool", "flatten", "fc"});
  REQUIRE(imagenet->state_dict().find("conv1.weight")->shape() == Shape{64, 3, 7, 7});
  REQUIRE(cifar->state_dict().find("conv1.weight")->shape() == Shape{64, 3, 3, 3});
  REQUIRE(cifar->state_dict().find("layer4.0.downsample.0.weight")->shape() ==
          Shape{512, 256, 1, 1});
  REQUIRE(imagenet->state_dict().find("fc.weight")->shape() == Shape{7, 512});
  // The feature map entering layer4: 64 -> 32 (conv1) -> 16 (maxpool) -> 16, 8, 4 -> 2; the CIFAR
  // stem keeps 32 -> 32, 16, 8 -> 4.
  NoGradGuard ng;
  imagenet->eval();
  cifar->eval();
  auto trunk = [](const std::shared_ptr<nn::Sequential>& m, Tensor x) {
    for (const auto& c : m->named_children()) {
      if (c.key == "layer4") break;
      x = std::dynamic_pointer_cast<nn::UnaryModule>(c.value)->forward(x);
    }
    return x;
  };
  REQUIRE(trunk(imagenet, rand({1, 3, 64, 64}, gen)).shape() == Shape{1, 256, 4, 4});
  REQUIRE(trunk(cifar, rand({1, 3, 32, 32}, gen)).shape() == Shape{1, 256, 8, 8});
}

TEST_CASE("zoo: make_divisible rounds as torchvision's _make_divisible") {
  REQUIRE(nn::make_divisible(32 * 1.0, 8) == 32);
  REQUIRE(nn::make_divisible(32 * 0.5, 8) == 16);
  REQUIRE(nn::make_divisible(16 * 0.5, 8) == 8);
  REQUIRE(nn::make_divisible(24 * 0.5, 8) == 16);   // 12 rounds half up
  REQUIRE(nn::make_divisible(96 * 0.35, 8) == 32);  // 33.6 -> 32
  REQUIRE(nn::make_divisible(160 * 0.75, 8) == 120);
  REQUIRE(nn::make_divisible(16 * 0.35, 8) == 8);  // at least the divisor
  REQUIRE(nn::make_divisible(19, 16) == 32);       // 16 would lose over 10%
  REQUIRE(nn::make_divisible(1280 * 1.4, 8) == 1792);
}

TEST_CASE("zoo: MobileNetV2's blocks, depthwise groups, widths and CIFAR strides") {
  Generator gen(6);
  nn::MobileNetV2Options half;
  half.width_mult = 0.5;
  auto m = nn::mobilenet_v2(gen, {3, 64, 64}, 10, half);
  REQUIRE(m->named_children().keys() ==
          std::vector<std::string>{"features", "avgpool", "flatten", "classifier"});
  auto features = m->at<nn::Sequential>(0);
  REQUIRE(features->size() == 19);
  const auto sd = m->state_dict();
  // Width 0.5: 16 stem channels, 8 out of block 1, 1280 last (never below), classifier 1280.
  REQUIRE(sd.find("features.0.0.weight")->shape() == Shape{16, 3, 3, 3});
  REQUIRE(sd.find("features.1.conv.0.0.weight")->shape() == Shape{16, 1, 3, 3});  // depthwise
  REQUIRE(sd.find("features.1.conv.1.weight")->shape() == Shape{8, 16, 1, 1});
  REQUIRE(sd.find("features.2.conv.0.0.weight")->shape() == Shape{48, 8, 1, 1});  // expand x6
  REQUIRE(sd.find("features.2.conv.1.0.weight")->shape() == Shape{48, 1, 3, 3});
  REQUIRE(sd.find("features.17.conv.2.weight")->shape() == Shape{160, 480, 1, 1});
  REQUIRE(sd.find("features.18.0.weight")->shape() == Shape{1280, 160, 1, 1});
  REQUIRE(sd.find("classifier.1.weight")->shape() == Shape{10, 1280});
  auto dw = std::dynamic_pointer_cast<nn::Sequential>(features->at<nn::InvertedResidual>(2)->conv())
                ->at<nn::Sequential>(1)
                ->at<nn::Conv2d>(0);
  REQUIRE(dw != nullptr);
  REQUIRE(dw->options().groups_ == 48);
  REQUIRE(dw->options().stride_ == Shape{2, 2});  // the first block of the c=24 group
  // Residual blocks: stride 1 with equal channels (3, 5, 6, 8, 9, 10, 12, 13, 15, 16).
  std::vector<std::size_t> residual;
  for (std::size_t i = 1; i <= 17; ++i)
    if (features->at<nn::InvertedResidual>(i)->use_res_connect()) residual.push_back(i);
  REQUIRE(residual == std::vector<std::size_t>{3, 5, 6, 8, 9, 10, 12, 13, 15, 16});
  REQUIRE(features->at<nn::InvertedResidual>(3)->named_children().keys() ==
          std::vector<std::string>{"conv", "add"});
  REQUIRE(features->at<nn::InvertedResidual>(4)->named_children().keys() ==
          std::vector<std::string>{"conv"});
  // The downsampling: by 32 (64 -> 2) and, in the CIFAR variant, by 8 (32 -> 4).
  NoGradGuard ng;
  m->eval();
  REQUIRE(features->forward(rand({1, 3, 64, 64}, gen)).shape() == Shape{1, 1280, 2, 2});
  nn::MobileNetV2Options cifar = half;
  cifar.cifar = true;
  auto c = nn::mobilenet_v2(gen, {3, 32, 32}, 10, cifar);
  c->eval();
  REQUIRE(c->at<nn::Sequential>(0)->forward(rand({1, 3, 32, 32}, gen)).shape() ==
          Shape{1, 1280, 4, 4});
  REQUIRE(c->forward(rand({2, 3, 32, 32}, gen)).shape() == Shape{2, 10});
  REQUIRE(std::dynamic_pointer_cast<nn::Sequential>(
              c->at<nn::Sequential>(0)->at<nn::InvertedResidual>(2)->conv())
              ->at<nn::Sequential>(1)
              ->at<nn::Conv2d>(0)
              ->options()
              .stride_ == Shape{1, 1});
  nn::MobileNetV2Options bad;
  bad.width_mult = 0;
  REQUIRE_THROWS_WITH(nn::mobilenet_v2(gen, {3, 32, 32}, 10, bad), Catch::Contains("width_mult"));
}

TEST_CASE("zoo: InvertedResidual's shortcut, residual add and child replacement") {
  Generator gen(8);
  nn::InvertedResidual same(8, 8, 1, 6, gen);
  REQUIRE(same.use_res_connect());
  REQUIRE(same.hidden_channels() == 48);
  nn::InvertedResidual thin(8, 8, 1, 1, gen);  // no expansion: depthwise first
  REQUIRE(thin.conv()->named_children().keys() == std::vector<std::string>{"0", "1", "2"});
  nn::InvertedResidual down(8, 16, 2, 6, gen);
  REQUIRE_FALSE(down.use_res_connect());
  REQUIRE(down.add() == nullptr);
  const Tensor x = randn({2, 8, 6, 6}, gen);
  REQUIRE(down(x).shape() == Shape{2, 16, 3, 3});
  // With the projection's weight zeroed, its BN outputs its bias (0) in eval mode: the block is
  // the identity.
  {
    NoGradGuard ng;
    auto proj = std::dynamic_pointer_cast<nn::Sequential>(same.conv())->at<nn::Conv2d>(2);
    REQUIRE(proj != nullptr);
    Tensor w = proj->weight();
    w.zero_();
  }
  same.eval();
  REQUIRE(same(x).to_vector<float>() == x.to_vector<float>());
  // Swapping the add or the layers updates what forward uses; wrong types are refused.
  same.replace_module("conv", std::make_shared<nn::Identity>());
  REQUIRE(same(x).to_vector<float>() == (x + x).to_vector<float>());
  REQUIRE_THROWS_AS(same.replace_module("add", std::make_shared<nn::ReLU>()), ValueError);
  REQUIRE_THROWS_AS(same.replace_module("conv", std::make_shared<nn::Add>()), ValueError);
  REQUIRE_THROWS_AS(nn::InvertedResidual(8, 8, 3, 6, gen), ValueError);
  REQUIRE_THROWS_AS(nn::InvertedResidual(8, 8, 1, 0, gen), ValueError);
}
