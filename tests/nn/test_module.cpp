// nn::Module: registration, traversal order and names, modes, in-place to(), zero_grad,
// state_dict/load_state_dict (including the all-problems error), printing and summary.
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "nn/modules/activation.h"
#include "nn/modules/flatten.h"
#include "nn/modules/identity.h"
#include "nn/modules/sequential.h"
#include "nn_test_helpers.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"

using namespace qgrad;
using qgrad_test::nn_fixture;

namespace {

// A layer with parameters and all kinds of buffers.
struct Block : nn::UnaryModule {
  Tensor weight, bias, running_mean, scratch, count;
  Block(std::int64_t in, std::int64_t out) : UnaryModule("Block") {
    weight = register_parameter("weight", full({out, in}, 0.5));
    bias = register_parameter("bias", zeros({out}));
    running_mean = register_buffer("running_mean", zeros({out}));
    scratch = register_buffer("scratch", zeros({2}), /*persistent=*/false);
    count = register_buffer("num_batches_tracked", scalar_tensor(0, TensorOptions().dtype(kInt64)));
  }
  // x [in] -> weight @ x + bias, written with broadcasting ops.
  Tensor forward(const Tensor& x) override { return sum(weight * x.unsqueeze(0), {1}) + bias; }
  std::string extra_repr() const override {
    return "in_features=" + std::to_string(weight.size(1)) +
           ", out_features=" + std::to_string(weight.size(0));
  }
};

struct Net : nn::Module {
  std::shared_ptr<nn::Sequential> features;
  std::shared_ptr<Block> head;
  Tensor scale;
  Net() {
    scale = register_parameter("scale", ones({1}));
    features = register_module(
        "features",
        std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::UnaryModule>>{
            std::make_shared<Block>(3, 4), std::make_shared<nn::ReLU>()}));
    head = register_module("head", std::make_shared<Block>(4, 2));
  }
  Tensor forward(const Tensor& x) { return head->forward(features->forward(x)) * scale; }
};

}  // namespace

TEST_CASE("Module: parameters and buffers in registration order with dotted names") {
  Net net;
  auto params = net.named_parameters();
  REQUIRE(params.keys() == std::vector<std::string>{"scale", "features.0.weight", "features.0.bias",
                                                    "head.weight", "head.bias"});
  REQUIRE(net.parameters().size() == 5);
  REQUIRE(net.parameters(/*recurse=*/false).size() == 1);
  REQUIRE(params["head.weight"].is_same(net.head->weight));
  for (const auto& p : net.parameters()) REQUIRE(p.requires_grad());

  auto bufs = net.named_buffers();
  REQUIRE(bufs.keys() == std::vector<std::string>{"features.0.running_mean", "features.0.scratch",
                                                  "features.0.num_batches_tracked",
                                                  "head.running_mean", "head.scratch",
                                                  "head.num_batches_tracked"});
  REQUIRE(net.buffers(false).empty());

  auto children = net.named_children();
  REQUIRE(children.keys() == std::vector<std::string>{"features", "head"});
  REQUIRE(net.children().size() == 2);
}

TEST_CASE("Module: named_modules is pre-order and needs shared ownership to include self") {
  auto net = std::make_shared<Net>();
  auto mods = net->named_modules();
  REQUIRE(mods.keys() ==
          std::vector<std::string>{"", "features", "features.0", "features.1", "head"});
  REQUIRE(mods[""].get() == net.get());
  REQUIRE(net->modules(false).size() == 4);

  Net local;
  REQUIRE(local.modules(false).size() == 4);
  REQUIRE_THROWS_AS(local.modules(), ValueError);
  REQUIRE_THROWS_WITH(local.modules(), Catch::Contains("shared_ptr"));

  std::vector<std::string> visited;
  local.apply(
      [&](const std::string& name, nn::Module& m) { visited.push_back(name + ":" + m.name()); });
  REQUIRE(visited == std::vector<std::string>{":Net", "features:Sequential", "features.0:Block",
                                              "features.1:ReLU", "head:Block"});
}

TEST_CASE("Module: registration errors name the problem") {
  Block b(2, 2);
  REQUIRE_THROWS_AS(b.register_parameter("weight", zeros({1})), ValueError);
  REQUIRE_THROWS_WITH(b.register_parameter("weight", zeros({1})),
                      Catch::Contains("already registered") && Catch::Contains("parameter"));
  REQUIRE_THROWS_WITH(b.register_buffer("bias", zeros({1})), Catch::Contains("'bias'"));
  REQUIRE_THROWS_WITH(b.register_parameter("a.b", zeros({1})), Catch::Contains("'.'"));
  REQUIRE_THROWS_AS(b.register_parameter("", zeros({1})), ValueError);
  REQUIRE_THROWS_AS(b.register_module("relu", std::shared_ptr<nn::ReLU>()), ValueError);
  REQUIRE_THROWS_AS(b.register_parameter("i", zeros({1}, TensorOptions().dtype(kInt64))),
                    DTypeError);
  // A non-leaf cannot be a parameter; an integer tensor can be when it needs no grad.
  Tensor leaf = ones({2}).set_requires_grad();
  REQUIRE_THROWS_WITH(b.register_parameter("nonleaf", leaf * 2.0), Catch::Contains("leaf"));
  b.register_parameter("frozen_int", zeros({1}, TensorOptions().dtype(kInt64)), false);
  // An undefined parameter is an absent optional one.
  b.register_parameter("maybe", Tensor());
  REQUIRE(b.named_parameters().keys() == std::vector<std::string>{"weight", "bias", "frozen_int"});
}

TEST_CASE("Module: train/eval apply recursively") {
  Net net;
  REQUIRE(net.is_training());
  net.eval();
  REQUIRE_FALSE(net.is_training());
  REQUIRE_FALSE(net.features->is_training());
  REQUIRE_FALSE((*net.features)[1]->is_training());
  net.train();
  REQUIRE(net.head->is_training());
  REQUIRE((*net.features)[0]->is_training());
}

TEST_CASE("Module: to(dtype) converts in place and keeps handles valid") {
  Net net;
  Tensor head_w = net.head->weight;  // a handle taken before the move
  net.head->weight.set_grad(full({2, 4}, 3.0));
  net.to(kFloat64);
  REQUIRE(head_w.dtype() == kFloat64);
  REQUIRE(net.named_parameters()["head.weight"].dtype() == kFloat64);
  REQUIRE(head_w.grad().dtype() == kFloat64);
  REQUIRE(head_w.grad().to_vector<double>() == std::vector<double>(8, 3.0));
  REQUIRE(head_w.to_vector<double>() == std::vector<double>(8, 0.5));
  REQUIRE(head_w.requires_grad());
  REQUIRE(net.head->running_mean.dtype() == kFloat64);
  REQUIRE(net.head->count.dtype() == kInt64);  // integer buffers keep their dtype
  REQUIRE_THROWS_AS(net.to(kInt32), DTypeError);

  // Gradients flow into the moved parameters through the old handles.
  net.zero_grad();
  Tensor x = from_vector<double>({1, -2, 3});
  Tensor y = sum(net.forward(x));
  y.backward();
  REQUIRE(head_w.grad().defined());
  REQUIRE(head_w.grad().dtype() == kFloat64);
  REQUIRE(net.features->at<Block>(0)->weight.grad().shape() == Shape{4, 3});

  net.to(kFloat32);
  REQUIRE(head_w.dtype() == kFloat32);
  REQUIRE(head_w.grad().dtype() == kFloat32);
}

TEST_CASE("Module: to(device) without CUDA is a DeviceError and to(CPU) is a no-op") {
  Net net;
  Tensor w = net.head->weight;
  net.to(kCPU);
  REQUIRE(w.device() == kCPU);
  if (!cuda_is_available()) {
    REQUIRE_THROWS_AS(net.to(kCUDA), DeviceError);
  } else {
    net.to(kCUDA);
    REQUIRE(w.device() == kCUDA);
    net.to(kCPU);
    REQUIRE(w.to_vector<float>() == std::vector<float>(8, 0.5f));
  }
}

TEST_CASE("Module: zero_grad sets every gradient to undefined") {
  Net net;
  Tensor y = sum(net.forward(ones({3})));
  y.backward();
  for (const auto& p : net.parameters()) REQUIRE(p.grad().defined());
  net.zero_grad();
  for (const auto& p : net.parameters()) REQUIRE_FALSE(p.grad().defined());
}

TEST_CASE("Module: state_dict holds parameters and persistent buffers, detached") {
  Net net;
  auto sd = net.state_dict();
  REQUIRE(sd.keys() == std::vector<std::string>{"scale", "features.0.weight", "features.0.bias",
                                                "features.0.running_mean",
                                                "features.0.num_batches_tracked", "head.weight",
                                                "head.bias", "head.running_mean",
                                                "head.num_batches_tracked"});
  REQUIRE_FALSE(sd["head.weight"].requires_grad());
  // Detached but sharing storage: writing through the state dict changes the module.
  sd["head.bias"].fill_(7.0);
  REQUIRE(net.head->bias.to_vector<float>() == std::vector<float>{7, 7});
}

TEST_CASE("Module: load_state_dict copies values, converting dtype") {
  Net src, dst;
  {
    NoGradGuard g;
    src.head->weight.fill_(1.25);
    src.features->at<Block>(0)->bias.copy_(from_vector<float>({1, 2, 3, 4}));
    src.head->count.fill_(17);
  }
  auto sd = src.state_dict();
  sd.insert_or_assign("head.running_mean", from_vector<double>({0.5, -0.5}));  // float64 in
  Tensor handle = dst.head->weight;
  auto res = dst.load_state_dict(sd);
  REQUIRE(res.missing_keys.empty());
  REQUIRE(res.unexpected_keys.empty());
  REQUIRE(handle.to_vector<float>() == std::vector<float>(8, 1.25f));
  REQUIRE(dst.features->at<Block>(0)->bias.to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  REQUIRE(dst.head->count.item<std::int64_t>() == 17);
  REQUIRE(dst.head->running_mean.dtype() == kFloat32);
  REQUIRE(dst.head->running_mean.to_vector<float>() == std::vector<float>{0.5f, -0.5f});
  REQUIRE(dst.head->weight.requires_grad());
}

TEST_CASE("Module: load_state_dict reports every problem at once and changes nothing") {
  Net net;
  auto sd = net.state_dict();
  TensorDict bad;
  for (const auto& it : sd) {
    if (it.key == "head.bias" || it.key == "scale") continue;  // missing
    if (it.key == "head.weight") {
      bad.insert(it.key, zeros({3, 4}));  // mis-shaped
      continue;
    }
    if (it.key == "features.0.weight") {
      bad.insert(it.key, zeros({4, 3, 1}));  // mis-shaped
      continue;
    }
    bad.insert(it.key, full_like(it.value, 9.0));
  }
  bad.insert("tail.weight", zeros({1}));  // unexpected
  bad.insert("head.extra", zeros({1}));   // unexpected
  try {
    net.load_state_dict(bad);
    FAIL("load_state_dict accepted a bad state dict");
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Catch::Contains("load_state_dict"));
    CHECK_THAT(msg, Catch::Contains("Missing key(s)") && Catch::Contains("\"scale\"") &&
                        Catch::Contains("\"head.bias\""));
    CHECK_THAT(msg, Catch::Contains("Unexpected key(s)") && Catch::Contains("\"tail.weight\"") &&
                        Catch::Contains("\"head.extra\""));
    CHECK_THAT(msg, Catch::Contains("size mismatch for head.weight") && Catch::Contains("[3, 4]") &&
                        Catch::Contains("[2, 4]"));
    CHECK_THAT(msg, Catch::Contains("size mismatch for features.0.weight"));
  }
  // Nothing was written.
  REQUIRE(net.head->running_mean.to_vector<float>() == std::vector<float>{0, 0});

  // Non-strict: missing/unexpected are returned, shape mismatches still throw.
  REQUIRE_THROWS_WITH(net.load_state_dict(bad, false), Catch::Contains("size mismatch"));
  bad.insert_or_assign("head.weight", full({2, 4}, 2.0));
  bad.insert_or_assign("features.0.weight", full({4, 3}, 2.0));
  auto res = net.load_state_dict(bad, /*strict=*/false);
  REQUIRE(res.missing_keys == std::vector<std::string>{"scale", "head.bias"});
  REQUIRE(res.unexpected_keys == std::vector<std::string>{"tail.weight", "head.extra"});
  REQUIRE(net.head->running_mean.to_vector<float>() == std::vector<float>{9, 9});
  REQUIRE(net.head->weight.to_vector<float>() == std::vector<float>(8, 2.0f));
}

TEST_CASE("Module: printout matches PyTorch's repr") {
  std::ifstream f(nn_fixture("repr.json"));
  REQUIRE(f.good());
  const auto expected = nlohmann::json::parse(f);

  auto inner = std::make_shared<nn::Sequential>();
  inner->push_back(std::make_shared<nn::ReLU>());
  inner->push_back(std::make_shared<nn::Flatten>(0, 2));
  nn::Sequential model;
  model.push_back(std::make_shared<nn::Flatten>());
  model.push_back(std::make_shared<nn::ReLU>());
  model.push_back(std::make_shared<nn::LeakyReLU>(0.2));
  model.push_back(std::make_shared<nn::Hardtanh>(-2.0, 3.5));
  model.push_back(std::make_shared<nn::ReLU6>());
  model.push_back(std::make_shared<nn::Sigmoid>());
  model.push_back(std::make_shared<nn::Tanh>());
  model.push_back(std::make_shared<nn::GELU>("tanh"));
  model.push_back(std::make_shared<nn::Identity>());
  model.push_back(inner);
  std::ostringstream os;
  os << model;
  REQUIRE(os.str() == expected["sequential"].get<std::string>());
  REQUIRE(nn::LeakyReLU(1e-5).repr() == expected["leaky_small"].get<std::string>());
  REQUIRE(nn::GELU().repr() == expected["gelu"].get<std::string>());
  REQUIRE(nn::Sequential().repr() == expected["empty_sequential"].get<std::string>());

  // extra_repr and children together, and the class name of a user module.
  Net net;
  const std::string r = net.repr();
  REQUIRE(r.rfind("Net(\n  (features): Sequential(\n    (0): Block(in_features=3, out_features=4)",
                  0) == 0);
  REQUIRE_THAT(r, Catch::EndsWith("(head): Block(in_features=4, out_features=2)\n)"));
}

TEST_CASE("Module: summary counts total and trainable parameters") {
  Net net;
  net.head->bias.set_requires_grad(false);
  REQUIRE(net.num_parameters() == 1 + 12 + 4 + 8 + 2);
  REQUIRE(net.num_parameters(/*trainable_only=*/true) == 1 + 12 + 4 + 8);
  const std::string s = net.summary();
  CHECK_THAT(s, Catch::Contains("Total params: 27"));
  CHECK_THAT(s, Catch::Contains("Trainable params: 25"));
  CHECK_THAT(s, Catch::Contains("Non-trainable params: 2"));
  CHECK_THAT(s, Catch::Contains("features.0.weight") && Catch::Contains("[4, 3]"));
  CHECK_THAT(s, Catch::Contains("Buffers: 6"));
}

TEST_CASE("Module: shared parameters and submodules are listed once, saved under every name") {
  struct Tied : nn::Module {
    std::shared_ptr<Block> enc;
    Tied() {
      enc = register_module("enc", std::make_shared<Block>(2, 2));
      register_module("dec", enc);  // the same module twice
      register_parameter("w_alias", enc->weight);
    }
  };
  auto m = std::make_shared<Tied>();
  REQUIRE(m->named_parameters().keys() == std::vector<std::string>{"w_alias", "enc.bias"});
  REQUIRE(m->named_modules().keys() == std::vector<std::string>{"", "enc"});
  REQUIRE(m->state_dict().size() == 1 + 2 * 4);
  // An optimiser over the deduplicated list accepts it.
  REQUIRE(m->parameters().size() == 2);
}
