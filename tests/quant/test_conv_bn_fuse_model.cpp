// Tests of the recipe's "fuse_bn" option (quant/modules/quant_recipe.h, quantize_model.h): the
// zoo models lenet5bn, vggfm and resnet20 converted with fused Conv-BN layers (structure, names
// returned, state-dict keys and values against the float model, parameter counts, a training
// step, freezing BN model-wide, a checkpoint round trip through load_quant_state_dict),
// exclusions, the errors for pairs that cannot be fused, and the recipe JSON.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>

#include "core/factory.h"
#include "nn/models/basic_block.h"
#include "nn/models/zoo.h"
#include "nn/modules/activation.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"
#include "nn/modules/identity.h"
#include "nn/modules/sequential.h"
#include "nn/optim/sgd.h"
#include "ops/binary/binary.h"
#include "ops/loss/loss.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"
#include "quant/modules/calibrate.h"
#include "quant/modules/quant_conv2d.h"
#include "quant/modules/quant_conv_bn2d.h"
#include "quant/modules/quantize_model.h"
#include "test_modules_helpers.h"

using namespace qgrad;
using namespace qgrad::quant;
using namespace qgrad_qm_test;
using json = nlohmann::json;

namespace {

std::shared_ptr<nn::Sequential> zoo(const std::string& name, std::uint64_t seed) {
  auto m = std::dynamic_pointer_cast<nn::Sequential>(nn::make_model(name, seed));
  REQUIRE(m != nullptr);
  return m;
}

// The BN names of the fused pairs -> their conv names, from quantize_model's result (each
// QuantConvBn2d's name is followed by its BN's).
std::map<std::string, std::string> fused_bn_names(nn::Module& model,
                                                  const std::vector<std::string>& replaced) {
  auto modules = model.named_modules();
  std::map<std::string, std::string> bn_to_conv;
  for (std::size_t i = 0; i < replaced.size(); ++i) {
    if (!std::dynamic_pointer_cast<QuantConvBn2d>(modules.at(replaced[i]))) continue;
    REQUIRE(i + 1 < replaced.size());
    REQUIRE(std::dynamic_pointer_cast<nn::Identity>(modules.at(replaced[i + 1])) != nullptr);
    bn_to_conv[replaced[i + 1]] = replaced[i];
  }
  return bn_to_conv;
}

// A float state-dict key under its fused name ("1.running_mean" -> "0.bn.running_mean").
std::string fused_key(const std::string& key,
                      const std::map<std::string, std::string>& bn_to_conv) {
  const std::string owner = key.substr(0, key.rfind('.'));
  auto it = bn_to_conv.find(owner);
  if (it == bn_to_conv.end()) return key;
  return it->second + ".bn" + key.substr(owner.size());
}

// Bit-identical values, checked in one assertion (the zoo's tensors are large).
bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(),
                     static_cast<std::size_t>(a.numel()) * dtype_size(a.dtype())) == 0;
}

void require_same_state_fast(const TensorDict& got, const TensorDict& want) {
  REQUIRE(got.keys() == want.keys());
  for (const auto& it : want) {
    INFO("state entry " << it.key);
    REQUIRE(same_bits(got.at(it.key), it.value));
  }
}

// Through a checkpoint file into `into` with load_quant_state_dict.
void round_trip(const nn::Module& from, nn::Module& into) {
  TempDir dir;
  const std::string path = dir.file("fused.safetensors");
  serialize::save_checkpoint(path, from, nullptr, nullptr, 1, 2);
  load_quant_state_dict(into, serialize::load_checkpoint(path).model);
  require_same_state_fast(into.state_dict(), from.state_dict());
}

Tensor images(std::uint64_t seed, std::int64_t n = 2) {
  Generator gen(seed);
  return randn({n, 1, 28, 28}, gen);
}

}  // namespace

TEST_CASE("quant.convbn_model: fuse_bn on the zoo models", "[quant][convbn]") {
  struct ModelCase {
    std::string name;
    std::size_t pairs, other;  // fused conv-BN pairs; other replaced modules (linears, adds)
    std::string first_conv, first_bn;
  };
  const std::vector<ModelCase> cases{{"lenet5bn", 2, 3, "0", "1"},
                                     {"vggfm", 4, 2, "0", "1"},
                                     {"resnet20", 1 + 18 + 2, 1 + 9, "conv1", "bn1"}};
  for (const ModelCase& c : cases) {
    INFO(c.name);
    auto float_net = zoo(c.name, 1);
    auto net = zoo(c.name, 1);
    const TensorDict float_state = float_net->state_dict();
    const std::vector<std::string> replaced =
        quantize_model(*net, json{{"family", "torch_ao"}, {"fuse_bn", true}});
    REQUIRE(replaced.size() == 2 * c.pairs + c.other);
    const auto bn_to_conv = fused_bn_names(*net, replaced);
    REQUIRE(bn_to_conv.size() == c.pairs);
    REQUIRE(bn_to_conv.at(c.first_bn) == c.first_conv);
    // No Conv2d, BatchNorm2d or QuantConv2d is left: every conv of the zoo is followed by a BN.
    std::size_t fused = 0;
    net->apply([&](const std::string& name, const nn::Module& m) {
      INFO(name);
      REQUIRE_FALSE(dynamic_cast<const QuantConv2d*>(&m));
      REQUIRE_FALSE(dynamic_cast<const nn::Conv2d*>(&m));
      if (dynamic_cast<const nn::BatchNorm2d*>(&m)) {
        // Only as the child "bn" of a fused layer.
        REQUIRE(name.size() > 3);
        REQUIRE(name.substr(name.size() - 3) == ".bn");
      }
      if (dynamic_cast<const QuantConvBn2d*>(&m)) ++fused;
    });
    REQUIRE(fused == c.pairs);
    // Every float entry is there under its fused name with its value (the tensors are shared);
    // everything else belongs to a quantizer. Parameters: the same count (torch_ao quantizers
    // have none).
    const TensorDict state = net->state_dict();
    std::size_t from_float = 0;
    for (const auto& it : float_state) {
      const std::string k = fused_key(it.key, bn_to_conv);
      INFO(it.key << " -> " << k);
      REQUIRE(state.contains(k));
      REQUIRE(same_bits(state.at(k), it.value));
      ++from_float;
    }
    for (const auto& it : state)
      if (it.key.find("_quantizer.") == std::string::npos) --from_float;
    REQUIRE(from_float == 0);
    REQUIRE(state.contains(c.first_conv + ".bn.running_var"));
    REQUIRE_FALSE(state.contains(c.first_bn + ".running_var"));
    REQUIRE(net->num_parameters() == float_net->num_parameters());
    // The same parameters as without fusion, just moved: equal counts with LSQ quantizers too.
    auto lsq_fused = zoo(c.name, 1), lsq_plain = zoo(c.name, 1);
    quantize_model(*lsq_fused, json{{"family", "lsq"}, {"fuse_bn", true}});
    quantize_model(*lsq_plain, json{{"family", "lsq"}});
    REQUIRE(lsq_fused->num_parameters() == lsq_plain->num_parameters());
    REQUIRE(lsq_fused->num_parameters() > float_net->num_parameters());

    // A training step: finite loss, gradients reach the BN parameters, running stats move.
    auto first = std::dynamic_pointer_cast<QuantConvBn2d>(net->named_modules().at(c.first_conv));
    REQUIRE(first != nullptr);
    const Tensor rm0 = first->bn()->running_mean().clone();
    optim::SGD opt(net->parameters(), optim::SGDOptions(0.01).momentum(0.9));
    const Tensor target = from_vector<std::int64_t>({3, 7}, {2});
    const Tensor loss = cross_entropy(net->forward(images(2)), target);
    REQUIRE(std::isfinite(loss.item<double>()));
    loss.backward();
    REQUIRE(first->bn()->weight().grad().defined());
    REQUIRE(first->weight().grad().defined());
    opt.step();
    REQUIRE(amax(abs(first->bn()->running_mean() - rm0)).item<double>() > 0);
    REQUIRE(first->bn()->num_batches_tracked().item<std::int64_t>() == 1);
    // Model-wide freeze.
    REQUIRE(freeze_bn_stats(*net) == c.pairs);
    net->train();
    const Tensor rm1 = first->bn()->running_mean().clone();
    net->forward(images(3));
    require_bitwise(first->bn()->running_mean(), rm1, "frozen running_mean");
    REQUIRE(update_bn_stats(*net) == c.pairs);

    // Checkpoint round trip into a fresh fused model with other weights.
    auto fresh = zoo(c.name, 2);
    quantize_model(*fresh, json{{"family", "torch_ao"}, {"fuse_bn", true}});
    round_trip(*net, *fresh);
    net->eval();
    fresh->eval();
    require_bitwise(fresh->forward(images(4)), net->forward(images(4)), "output after load");
  }
}

TEST_CASE("quant.convbn_model: lazily sized nvidia buffers load into a fused model",
          "[quant][convbn]") {
  const json recipe{{"family", "nvidia"}, {"fuse_bn", true}};
  auto net = zoo("lenet5bn", 3);
  quantize_model(*net, recipe);
  calibrate_model(*net, 1, [&](std::int64_t) { net->forward(images(5)); });
  REQUIRE(calibratable_names(*net).front() == "0._input_quantizer");
  net->forward(images(6));
  auto fresh = zoo("lenet5bn", 4);
  quantize_model(*fresh, recipe);
  checkpoint_round_trip(*net, *fresh);
  // Also straight from a state dict.
  auto fresh2 = zoo("lenet5bn", 5);
  quantize_model(*fresh2, recipe);
  load_quant_state_dict(*fresh2, net->state_dict());
  net->eval();
  fresh2->eval();
  require_bitwise(fresh2->forward(images(7)), net->forward(images(7)), "output after load");
}

TEST_CASE("quant.convbn_model: fuse_bn exclusions and errors", "[quant][convbn]") {
  // Excluding the conv keeps the pair float; the other pairs are fused.
  auto net = zoo("resnet20", 6);
  const auto replaced =
      quantize_model(*net, json{{"family", "nvidia"}, {"fuse_bn", true}, {"exclude", {"conv1"}}});
  REQUIRE(std::find(replaced.begin(), replaced.end(), "bn1") == replaced.end());
  REQUIRE(std::dynamic_pointer_cast<nn::Conv2d>(net->named_children().at("conv1")));
  REQUIRE(std::dynamic_pointer_cast<nn::BatchNorm2d>(net->named_children().at("bn1")));
  auto modules = net->named_modules();
  REQUIRE(std::dynamic_pointer_cast<QuantConvBn2d>(modules.at("layer1.0.conv2")));
  REQUIRE(std::dynamic_pointer_cast<nn::Identity>(modules.at("layer1.0.bn2")));
  REQUIRE(std::dynamic_pointer_cast<QuantConvBn2d>(modules.at("layer3.0.downsample.0")));
  REQUIRE(std::dynamic_pointer_cast<nn::Identity>(modules.at("layer3.0.downsample.1")));
  // Quantizing again without the exclusion fuses the pair that was left float, nothing else.
  REQUIRE(quantize_model(*net, json{{"family", "nvidia"}, {"fuse_bn", true}}) ==
          std::vector<std::string>{"conv1", "bn1"});
  REQUIRE(std::dynamic_pointer_cast<QuantConvBn2d>(net->named_children().at("conv1")));

  // Excluding only the BN of a pair: an error before anything changes.
  auto net2 = zoo("resnet20", 6);
  const std::string before = net2->repr();
  REQUIRE_THROWS_AS(
      quantize_model(*net2,
                     json{{"family", "nvidia"}, {"fuse_bn", true}, {"exclude", {"layer2.1.bn1"}}}),
      ValueError);
  REQUIRE_THROWS_WITH(
      quantize_model(*net2,
                     json{{"family", "nvidia"}, {"fuse_bn", true}, {"exclude", {"layer2.1.bn1"}}}),
      Catch::Contains("quantize_model") && Catch::Contains("fuse_bn") &&
          Catch::Contains("'layer2.1.conv1'") && Catch::Contains("'layer2.1.bn1'"));
  REQUIRE(net2->repr() == before);
  // Excluding the block: everything in it stays float.
  auto net3 = zoo("resnet20", 6);
  quantize_model(*net3, json{{"family", "nvidia"}, {"fuse_bn", true}, {"exclude", {"layer2.1"}}});
  REQUIRE(std::dynamic_pointer_cast<nn::BatchNorm2d>(net3->named_modules().at("layer2.1.bn1")));

  // Pairs that cannot be fused.
  Generator gen(1);
  auto mismatched = std::make_shared<nn::Sequential>();
  mismatched->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(2, 4, 3), gen));
  mismatched->push_back(std::make_shared<nn::BatchNorm2d>(5));
  REQUIRE_THROWS_WITH(quantize_model(*mismatched, json{{"family", "torch_ao"}, {"fuse_bn", true}}),
                      Catch::Contains("quantize_model") && Catch::Contains("'0'") &&
                          Catch::Contains("'1'") && Catch::Contains("5 features") &&
                          Catch::Contains("4 output channels"));
  REQUIRE(std::dynamic_pointer_cast<nn::Conv2d>((*mismatched)[0]));
  // Without fuse_bn the same model converts as before (the BN is not touched).
  REQUIRE(quantize_model(*mismatched, json{{"family", "torch_ao"}}) ==
          std::vector<std::string>{"0"});
  auto plain_bn = std::make_shared<nn::Sequential>();
  plain_bn->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(2, 4, 3), gen));
  plain_bn->push_back(std::make_shared<nn::BatchNorm2d>(nn::BatchNormOptions(4).affine(false)));
  REQUIRE_THROWS_WITH(quantize_model(*plain_bn, json{{"family", "torch_ao"}, {"fuse_bn", true}}),
                      Catch::Contains("affine"));
  // A conv not followed by a BN (or a BN not after a conv) is handled as without fuse_bn.
  auto mixed = std::make_shared<nn::Sequential>();
  mixed->push_back(std::make_shared<nn::BatchNorm2d>(2));
  mixed->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(2, 4, 3), gen));
  mixed->push_back(std::make_shared<nn::ReLU>());
  mixed->push_back(std::make_shared<nn::BatchNorm2d>(4));
  REQUIRE(quantize_model(*mixed, json{{"family", "torch_ao"}, {"fuse_bn", true}}) ==
          std::vector<std::string>{"1"});
  REQUIRE(std::dynamic_pointer_cast<QuantConv2d>((*mixed)[1]));
  // Fusion without weight quantizers is allowed (float fused training).
  auto vgg = zoo("vggfm", 1);
  quantize_model(*vgg, json{{"family", "torch_ao"}, {"weight", nullptr}, {"fuse_bn", true}});
  auto fused0 = std::dynamic_pointer_cast<QuantConvBn2d>((*vgg)[0]);
  REQUIRE(fused0 != nullptr);
  REQUIRE(fused0->weight_quantizer() == nullptr);
  REQUIRE(fused0->input_quantizer() != nullptr);
}

TEST_CASE("quant.convbn_model: the fuse_bn recipe key", "[quant][convbn]") {
  const QuantRecipe off = QuantRecipe::from_json({{"family", "torch_ao"}});
  REQUIRE_FALSE(off.fuse_bn());
  REQUIRE(off.to_json().at("fuse_bn") == false);
  const QuantRecipe on = QuantRecipe::from_json({{"family", "horizon"}, {"fuse_bn", true}});
  REQUIRE(on.fuse_bn());
  REQUIRE(on.to_json().at("fuse_bn") == true);
  REQUIRE(QuantRecipe::from_json(on.to_json()).to_json() == on.to_json());
  REQUIRE(QuantRecipe::from_json(on.to_json()).fuse_bn());
  REQUIRE_THROWS_AS(QuantRecipe::parse(R"({"family": "nvidia", "fuse_bn": 1})"), ValueError);
  REQUIRE_THROWS_WITH(QuantRecipe::parse(R"({"family": "nvidia", "fuse_bn": "yes"})"),
                      Catch::Contains("quant recipe") && Catch::Contains("\"fuse_bn\""));
  // Without fuse_bn nothing changes: QuantConv2d and a float BN, the float keys.
  auto net = zoo("lenet5bn", 1);
  quantize_model(*net, off);
  REQUIRE(std::dynamic_pointer_cast<QuantConv2d>((*net)[0]));
  REQUIRE(std::dynamic_pointer_cast<nn::BatchNorm2d>((*net)[1]));
  REQUIRE(net->state_dict().contains("1.running_mean"));
}
