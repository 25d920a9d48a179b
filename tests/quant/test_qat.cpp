// Tests of the QAT layers and model conversion (quant/modules/quant_linear.h, quant_conv2d.h,
// quant_add.h, quant_recipe.h, quantize_model.h, calibrate.h): quantized layers against the
// functional composition, weight sharing with the float layer, quantize_model on a nested
// Sequential giving exactly what manual wrapping gives for every family (outputs, gradients,
// state), residual adds in ResNet-20 blocks, exclusions, calibration helpers, checkpoints, the
// recipe JSON (defaults, round trip, errors naming the key).
#include <catch2/catch.hpp>

#include <stdexcept>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "nn/models/zoo.h"
#include "nn/modules/activation.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"
#include "nn/modules/flatten.h"
#include "nn/modules/linear.h"
#include "nn/modules/sequential.h"
#include "ops/binary/binary.h"
#include "ops/conv/conv.h"
#include "ops/matmul/matmul.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"
#include "quant/modules/aimet_quantizer.h"
#include "quant/modules/calibrate.h"
#include "quant/modules/fake_quantize.h"
#include "quant/modules/fused_fake_quantize.h"
#include "quant/modules/horizon_fake_quantize.h"
#include "quant/modules/learnable_fake_quantize.h"
#include "quant/modules/quant_add.h"
#include "quant/modules/quant_conv2d.h"
#include "quant/modules/quant_linear.h"
#include "quant/modules/quantize_model.h"
#include "quant/modules/tensor_quantizer.h"
#include "quant/nvidia/tensor_quant.h"
#include "test_modules_helpers.h"

using namespace qgrad;
using namespace qgrad::quant;
using namespace qgrad_qm_test;
using json = nlohmann::json;

namespace {

// Conv-BN-ReLU, a nested Sequential with a grouped conv, Flatten, Linear.
std::shared_ptr<nn::Sequential> small_net(std::uint64_t seed) {
  Generator gen(seed);
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(2, 4, 3).padding(1), gen));
  m->push_back(std::make_shared<nn::BatchNorm2d>(nn::BatchNormOptions(4)));
  m->push_back(std::make_shared<nn::ReLU>());
  auto inner = std::make_shared<nn::Sequential>();
  inner->push_back(std::make_shared<nn::Conv2d>(
      nn::Conv2dOptions(4, 4, 3).padding(1).groups(2).bias(false), gen));
  inner->push_back(std::make_shared<nn::ReLU>());
  m->push_back(inner);
  m->push_back(std::make_shared<nn::Flatten>());
  m->push_back(std::make_shared<nn::Linear>(4 * 5 * 5, 3, gen));
  return m;
}

// The quantizers each family's default recipe uses, built by hand.
struct ManualQuantizers {
  std::function<std::shared_ptr<nn::UnaryModule>()> input;
  std::function<std::shared_ptr<nn::UnaryModule>(const Shape&)> weight;
};

ManualQuantizers manual(const std::string& family) {
  using nvidia::QuantDescriptor;
  using nvidia::QuantDescriptorOptions;
  if (family == "nvidia")
    return {[] { return std::make_shared<TensorQuantizer>(QuantDescriptor()); },
            [](const Shape& ws) {
              Shape a(ws.size(), 1);
              a[0] = ws[0];
              return std::make_shared<TensorQuantizer>(
                  QuantDescriptor(QuantDescriptorOptions().axis(0)),
                  TensorQuantizerOptions().amax_shape(a));
            }};
  if (family == "torch_ao")
    // PyTorch 1.13's get_default_qat_qconfig("fbgemm"): the fused observer + fake quant.
    return {
        [] {
          return std::make_shared<FusedMovingAvgObsFakeQuantize>(default_qat_activation_config());
        },
        [](const Shape& ws) {
          FakeQuantizeConfig c = default_qat_weight_config();
          c.channel_len = ws[0];
          return std::make_shared<FusedMovingAvgObsFakeQuantize>(c);
        }};
  if (family == "lsq")
    return {[] {
              LearnableFakeQuantizeConfig c;
              c.observer.options.dtype(ao::QuantDType::QUInt8)
                  .qscheme(ao::QScheme::PerTensorAffine)
                  .quant_range(0, 255);
              c.use_grad_scaling = true;
              c.init = LearnableInit::MinMax;
              return std::make_shared<LearnableFakeQuantize>(c);
            },
            [](const Shape&) {
              LearnableFakeQuantizeConfig c;
              c.observer.options.dtype(ao::QuantDType::QInt8)
                  .qscheme(ao::QScheme::PerTensorSymmetric)
                  .quant_range(-128, 127);
              c.use_grad_scaling = true;
              c.init = LearnableInit::LSQ;
              return std::make_shared<LearnableFakeQuantize>(c);
            }};
  if (family == "horizon")
    return {[] { return std::make_shared<HorizonFakeQuantize>(); },
            [](const Shape& ws) {
              return std::make_shared<HorizonFakeQuantize>(
                  horizon::FakeQuantizeOptions().per_channel(0, ws[0]));
            }};
  return {[] { return std::make_shared<AimetQuantizeDequantize>(Shape{}, 8, false); },
          [](const Shape& ws) {
            Shape e(ws.size(), 1);
            e[0] = ws[0];
            return std::make_shared<AimetQuantizeDequantize>(e, 8, true);
          }};
}

void wrap_by_hand(nn::Sequential& m, const ManualQuantizers& q) {
  auto conv0 = m.at<nn::Conv2d>(0);
  m.replace_module("0",
                   QuantConv2d::from_float(*conv0, q.input(), q.weight(conv0->weight().shape())));
  auto inner = m.at<nn::Sequential>(3);
  auto conv1 = inner->at<nn::Conv2d>(0);
  inner->replace_module(
      "0", QuantConv2d::from_float(*conv1, q.input(), q.weight(conv1->weight().shape())));
  auto fc = m.at<nn::Linear>(5);
  m.replace_module("5", QuantLinear::from_float(*fc, q.input(), q.weight(fc->weight().shape())));
}

Tensor batch(std::uint64_t seed) {
  Generator gen(seed);
  return randn({3, 2, 5, 5}, gen);
}

}  // namespace

TEST_CASE("quant.qat: QuantLinear equals the functional composition and shares the float weights",
          "[quant][qat]") {
  Generator gen(1);
  auto lin = std::make_shared<nn::Linear>(6, 4, gen);
  auto q = QuantLinear::from_float(*lin);
  REQUIRE(q->weight().is_same(lin->weight()));
  REQUIRE(q->bias().is_same(lin->bias()));
  REQUIRE(q->state_dict().keys() ==
          std::vector<std::string>{"weight", "bias", "_input_quantizer._amax",
                                   "_input_quantizer._disabled", "_input_quantizer._if_quant",
                                   "_input_quantizer._if_calib", "_weight_quantizer._amax",
                                   "_weight_quantizer._disabled", "_weight_quantizer._if_quant",
                                   "_weight_quantizer._if_calib"});
  REQUIRE(q->state_dict().at("_weight_quantizer._amax").shape() == Shape{4, 1});
  REQUIRE(q->repr() ==
          "QuantLinear(\n  in_features=6, out_features=4, bias=True\n  (_input_quantizer): "
          "TensorQuantizer(8bit fake per-tensor amax=dynamic calibrator=MaxCalibrator quant)\n  "
          "(_weight_quantizer): TensorQuantizer(8bit fake axis=0 amax=dynamic "
          "calibrator=MaxCalibrator quant)\n)");
  const Tensor x0 = randn({5, 6}, gen);
  const Tensor x = x0.clone().set_requires_grad(true);
  Tensor y = q->forward(x);
  // By hand: dynamic per-tensor input amax, dynamic per-row weight amax, 8 bits, narrow off.
  const Tensor w = lin->weight().detach().clone().set_requires_grad(true);
  const Tensor b = lin->bias().detach().clone().set_requires_grad(true);
  const Tensor xr = x0.clone().set_requires_grad(true);
  const Tensor xq = nvidia::fake_tensor_quant(xr, amax(abs(x0)), 8, false, false);
  const Tensor wq = nvidia::fake_tensor_quant(w, amax(abs(w.detach()), {1}, true), 8, false, false);
  Tensor yr = linear(xq, wq, b);
  require_bitwise(y, yr, "forward");
  const Tensor dy = randn({5, 4}, gen);
  y.backward(dy);
  yr.backward(dy);
  require_bitwise(x.grad(), xr.grad(), "dx");
  require_bitwise(lin->weight().grad(), w.grad(), "dW (into the shared float weight)");
  require_bitwise(q->bias().grad(), b.grad(), "db");
  // Without quantizers it is the float layer.
  auto plain = QuantLinear::from_float(*lin, nullptr, nullptr);
  require_bitwise(plain->forward(x0), lin->forward(x0), "no quantizers");
  REQUIRE(plain->state_dict().keys() == std::vector<std::string>{"weight", "bias"});
  REQUIRE_THROWS_WITH(q->forward(randn({5, 5}, gen)),
                      Catch::Contains("QuantLinear") && Catch::Contains("in_features=6"));
  // A fresh layer draws the same weights as nn::Linear from the same generator.
  Generator g1(9), g2(9);
  QuantLinear fresh(nn::LinearOptions(3, 2).bias(false), g1);
  nn::Linear ref(nn::LinearOptions(3, 2).bias(false), g2);
  require_bitwise(fresh.weight(), ref.weight(), "fresh weights");
  REQUIRE_FALSE(fresh.bias().defined());
}

TEST_CASE("quant.qat: QuantConv2d equals the functional composition", "[quant][qat]") {
  Generator gen(2);
  auto conv =
      std::make_shared<nn::Conv2d>(nn::Conv2dOptions(4, 6, 3).stride(2).padding(1).groups(2), gen);
  auto q = QuantConv2d::from_float(*conv);
  REQUIRE(q->weight().is_same(conv->weight()));
  REQUIRE(q->repr().find("QuantConv2d(\n  4, 6, kernel_size=(3, 3), stride=(2, 2), "
                         "padding=(1, 1), groups=2\n") == 0);
  REQUIRE(q->state_dict().at("_weight_quantizer._amax").shape() == Shape{6, 1, 1, 1});
  const Tensor x0 = randn({2, 4, 7, 7}, gen);
  const Tensor w = conv->weight().detach();
  const Tensor want =
      conv2d(nvidia::fake_tensor_quant(x0, amax(abs(x0)), 8, false, false),
             nvidia::fake_tensor_quant(w, amax(abs(w), {1, 2, 3}, true), 8, false, false),
             conv->bias().detach(), {2}, {1}, {1}, 2);
  require_bitwise(q->forward(x0), want, "forward");
  // Unbatched input: the same as the batch of one.
  const Tensor one = x0.select(0, 1);
  require_bitwise(q->forward(one), q->forward(one.unsqueeze(0)).squeeze(0), "unbatched");
  REQUIRE_THROWS_WITH(q->forward(randn({2, 3, 7, 7}, gen)), Catch::Contains("QuantConv2d"));
  REQUIRE_THROWS_AS(q->forward(randn({7, 7}, gen)), ShapeError);
  // Replacing a quantizer keeps the forward handle in step.
  q->replace_module("_input_quantizer", std::make_shared<TensorQuantizer>(nvidia::QuantDescriptor(
                                            nvidia::QuantDescriptorOptions().num_bits(4))));
  const Tensor want4 =
      conv2d(nvidia::fake_tensor_quant(x0, amax(abs(x0)), 4, false, false),
             nvidia::fake_tensor_quant(w, amax(abs(w), {1, 2, 3}, true), 8, false, false),
             conv->bias().detach(), {2}, {1}, {1}, 2);
  require_bitwise(q->forward(x0), want4, "4-bit input after replace_module");
}

TEST_CASE("quant.qat: quantize_model equals manual wrapping for every family", "[quant][qat]") {
  for (const std::string family : {"nvidia", "torch_ao", "lsq", "horizon", "aimet"}) {
    INFO(family);
    const QuantRecipe recipe = QuantRecipe::from_json({{"family", family}});
    auto auto_net = small_net(3), hand_net = small_net(3);
    const std::vector<std::string> swapped = quantize_model(*auto_net, recipe);
    REQUIRE(swapped == std::vector<std::string>{"0", "3.0", "5"});
    wrap_by_hand(*hand_net, manual(family));
    REQUIRE(auto_net->repr() == hand_net->repr());
    REQUIRE(auto_net->state_dict().keys() == hand_net->state_dict().keys());
    if (recipe.calibration_batches() > 0) {
      for (auto* net : {auto_net.get(), hand_net.get()}) {
        const std::size_t n = calibrate_model(
            *net, 2,
            [&](std::int64_t i) { net->forward(batch(10 + static_cast<std::uint64_t>(i))); },
            recipe.calibration_options());
        REQUIRE(n == 6);
        REQUIRE(net->is_training());
      }
    }
    // Two training steps: outputs, every gradient and the whole state agree bit for bit.
    for (int step = 0; step < 2; ++step) {
      const Tensor x = batch(20 + static_cast<std::uint64_t>(step));
      Tensor ya = auto_net->forward(x), yb = hand_net->forward(x);
      require_bitwise(ya, yb, "output");
      sum(ya * ya).backward();
      sum(yb * yb).backward();
      const TensorDict pa = auto_net->named_parameters(), pb = hand_net->named_parameters();
      REQUIRE(pa.keys() == pb.keys());
      for (const auto& it : pa) {
        INFO(it.key);
        if (!it.value.grad().defined()) {
          REQUIRE_FALSE(pb.at(it.key).grad().defined());
          continue;
        }
        require_bitwise(it.value.grad(), pb.at(it.key).grad(), "grad " + it.key);
      }
      auto_net->zero_grad();
      hand_net->zero_grad();
    }
    require_same_state(auto_net->state_dict(), hand_net->state_dict());
    // The quantized model differs from the float one (the quantizers do something).
    auto float_net = small_net(3);
    const Tensor x = batch(30);
    const double diff = amax(abs(float_net->forward(x) - auto_net->forward(x))).item<double>();
    REQUIRE(diff > 0);
    REQUIRE(diff < 0.5);
  }
}

TEST_CASE("quant.qat: quantize_model on ResNet-20 quantizes the residual adds", "[quant][qat]") {
  auto net = std::dynamic_pointer_cast<nn::Sequential>(nn::make_model("resnet20", 4));
  REQUIRE(net != nullptr);
  const std::vector<std::string> swapped =
      quantize_model(*net, json{{"family", "nvidia"}, {"exclude", {"conv1"}}});
  // 18 block convs + 2 projection convs + fc quantized, conv1 excluded, 9 adds.
  REQUIRE(swapped.size() == 18 + 2 + 1 + 9);
  REQUIRE(std::find(swapped.begin(), swapped.end(), "layer2.0.add") != swapped.end());
  REQUIRE(std::find(swapped.begin(), swapped.end(), "conv1") == swapped.end());
  REQUIRE(std::dynamic_pointer_cast<nn::Conv2d>(net->named_children().at("conv1")) != nullptr);
  Generator gen(5);
  const Tensor x = randn({2, 1, 28, 28}, gen);
  calibrate_model(*net, 1, [&](std::int64_t) { net->forward(x); });
  // The block's forward reached the QuantAdd (nn::Add::forward is virtual): its quantizers
  // calibrated an amax.
  auto modules = net->named_modules();
  auto add = std::dynamic_pointer_cast<QuantAdd>(modules.at("layer1.0.add"));
  REQUIRE(add != nullptr);
  auto q0 = std::dynamic_pointer_cast<TensorQuantizer>(add->input0_quantizer());
  auto q1 = std::dynamic_pointer_cast<TensorQuantizer>(add->input1_quantizer());
  REQUIRE(q0->has_amax());
  REQUIRE(q1->has_amax());
  const Tensor y = net->forward(x);
  REQUIRE(y.shape() == Shape{2, 10});
  // QuantAdd by itself: q0(a) + q1(b).
  const Tensor a = randn({3, 4}, gen), b = randn({3, 4}, gen);
  QuantAdd qa;
  require_bitwise(qa.forward(a, b),
                  nvidia::fake_tensor_quant(a, amax(abs(a)), 8, false, false) +
                      nvidia::fake_tensor_quant(b, amax(abs(b)), 8, false, false),
                  "QuantAdd");
  nn::Add& as_add = qa;
  require_bitwise(as_add.forward(a, b), qa.forward(a, b), "through nn::Add");
  // It prints under its own name, as pytorch_quantization's QuantAdd; a plain Add stays "Add".
  REQUIRE(qa.name() == "QuantAdd");
  REQUIRE(qa.repr().rfind("QuantAdd(", 0) == 0);
  REQUIRE(nn::Add().name() == "Add");
}

TEST_CASE("quant.qat: quantize_model options, exclusions and errors", "[quant][qat]") {
  // Weights only: no input quantizers, adds untouched.
  auto net = small_net(6);
  quantize_model(*net, json{{"family", "torch_ao"}, {"input", nullptr}});
  auto conv = net->at<QuantConv2d>(0);
  REQUIRE(conv->input_quantizer() == nullptr);
  REQUIRE(std::dynamic_pointer_cast<FusedMovingAvgObsFakeQuantize>(conv->weight_quantizer()) !=
          nullptr);
  // The unfused FakeQuantize is the observer "moving_average_minmax".
  auto net1 = small_net(6);
  quantize_model(*net1, json{{"family", "torch_ao"},
                             {"input", nullptr},
                             {"weight", {{"observer", "moving_average_minmax"}}}});
  REQUIRE(std::dynamic_pointer_cast<FakeQuantize>(net1->at<QuantConv2d>(0)->weight_quantizer()) !=
          nullptr);
  REQUIRE_THROWS_WITH(QuantRecipe::from_json(json{{"family", "torch_ao"},
                                                  {"weight",
                                                   {{"observer", "fused_moving_average_minmax"},
                                                    {"qscheme", "per_channel_affine"},
                                                    {"ch_axis", 1}}}}),
                      Catch::Contains("fused_moving_average_minmax") && Catch::Contains("axis 0"));
  // Quantizing again leaves quantized layers alone.
  REQUIRE(quantize_model(*net, json{{"family", "nvidia"}}).empty());
  // Excluding a nested Sequential keeps everything below it float.
  auto net2 = small_net(6);
  REQUIRE(quantize_model(*net2, json{{"family", "horizon"}, {"exclude", {"3"}}}) ==
          std::vector<std::string>{"0", "5"});
  REQUIRE(std::dynamic_pointer_cast<nn::Conv2d>(net2->at<nn::Sequential>(3)->operator[](0)));
  REQUIRE_THROWS_WITH(quantize_model(*small_net(6), json{{"family", "nvidia"}, {"exclude", {"7"}}}),
                      Catch::Contains("quantize_model") && Catch::Contains("'7'"));
  Generator gen(1);
  nn::Linear bare(2, 2, gen);
  REQUIRE_THROWS_WITH(quantize_model(bare, json{{"family", "nvidia"}}),
                      Catch::Contains("Sequential"));
  // Errors of a recipe naming the key.
  REQUIRE_THROWS_WITH(quantize_model(*small_net(6), json{{"family", "nvidia"}, {"bogus", 1}}),
                      Catch::Contains("\"bogus\""));
}

TEST_CASE("quant.qat: a quantized model round-trips through a checkpoint", "[quant][qat]") {
  for (const std::string family : {"nvidia", "torch_ao", "lsq", "horizon", "aimet"}) {
    INFO(family);
    const QuantRecipe recipe = QuantRecipe::from_json({{"family", family}});
    auto net = small_net(7);
    quantize_model(*net, recipe);
    calibrate_model(
        *net, 2, [&](std::int64_t i) { net->forward(batch(40 + static_cast<std::uint64_t>(i))); });
    net->forward(batch(42));    // one training step's forward (observers, LSQ init)
    auto fresh = small_net(8);  // other weights, same structure
    quantize_model(*fresh, recipe);
    checkpoint_round_trip(*net, *fresh);
    net->eval();
    fresh->eval();
    require_bitwise(fresh->forward(batch(43)), net->forward(batch(43)), "output after load");
  }
}

TEST_CASE("quant.qat: calibrate_model helpers and failures", "[quant][qat]") {
  auto net = small_net(9);
  quantize_model(*net, json{{"family", "nvidia"},
                            {"input", {{"num_bits", 8}, {"calib_method", "histogram"}}}});
  REQUIRE(calibratable_names(*net) ==
          std::vector<std::string>{"0._input_quantizer", "0._weight_quantizer",
                                   "3.0._input_quantizer", "3.0._weight_quantizer",
                                   "5._input_quantizer", "5._weight_quantizer"});
  REQUIRE_THROWS_WITH(calibrate_model(*net, 0, [](std::int64_t) {}),
                      Catch::Contains("num_batches"));
  // A batch that throws: the quantizers are finished leniently, the error propagates.
  REQUIRE_THROWS_AS(calibrate_model(*net, 2, [](std::int64_t) { throw std::runtime_error("x"); }),
                    std::runtime_error);
  auto q = std::dynamic_pointer_cast<TensorQuantizer>(net->at<QuantConv2d>(0)->input_quantizer());
  REQUIRE(q->quant_enabled());
  REQUIRE_FALSE(q->calib_enabled());
  // A quantizer that sees no data: the error names it.
  REQUIRE_THROWS_WITH(calibrate_model(*net, 1, [](std::int64_t) {}),
                      Catch::Contains("calibrate_model: quantizer '0._input_quantizer'") &&
                          Catch::Contains("no data"));
  // Histogram inputs use the recipe's method.
  CalibrationOptions opts;
  opts.method = "percentile";
  calibrate_model(
      *net, 2, [&](std::int64_t i) { net->forward(batch(50 + static_cast<std::uint64_t>(i))); },
      opts);
  REQUIRE(q->has_amax());
  REQUIRE(q->amax().item<double>() < amax(abs(batch(50))).item<double>());
}

TEST_CASE("quant.qat: recipe JSON defaults, round trip and errors naming the key", "[quant][qat]") {
  const QuantRecipe r = QuantRecipe::parse(R"({"family": "nvidia"})");
  REQUIRE(r.family() == QuantFamily::NVIDIA);
  REQUIRE(r.to_json() == json::parse(R"({"family": "nvidia", "weight": {"num_bits": 8, "axis": 0},
      "input": {"num_bits": 8}, "add": true, "fuse_bn": false, "bias": "float", "exclude": [],
      "calibration": {"batches": 8, "method": "entropy", "percentile": 99.99, "start_bin": 128,
                      "stride": 1, "strict": true}})"));
  for (const char* fam : {"nvidia", "torch_ao", "lsq", "horizon", "aimet"}) {
    const QuantRecipe a = QuantRecipe::from_json({{"family", fam}, {"exclude", {"fc"}}});
    REQUIRE(QuantRecipe::from_json(a.to_json()).to_json() == a.to_json());
    REQUIRE(quant_family_name(a.family()) == std::string(fam));
  }
  const QuantRecipe brief = QuantRecipe::from_json(json::parse(
      R"({"family": "nvidia", "weight": {"num_bits": 8, "axis": 0},
          "input": {"num_bits": 8, "calib_method": "histogram"},
          "calibration": {"method": "mse", "batches": 4}})"));
  REQUIRE(brief.calibration_batches() == 4);
  REQUIRE(brief.calibration_options().method == "mse");
  auto in = std::dynamic_pointer_cast<TensorQuantizer>(brief.make_input_quantizer());
  REQUIRE(in->histogram_calibrator() != nullptr);
  REQUIRE(QuantRecipe::from_json({{"family", "lsq"}}).calibration_batches() == 0);
  const QuantRecipe none = QuantRecipe::from_json({{"family", "aimet"},
                                                   {"weight", nullptr},
                                                   {"input", nullptr},
                                                   {"calibration", {{"batches", 0}}}});
  REQUIRE_FALSE(none.quantizes_weights());
  REQUIRE(none.make_weight_quantizer({2, 2}) == nullptr);

  auto throws_naming = [](const std::string& text, const std::string& key) {
    INFO(text);
    REQUIRE_THROWS_AS(QuantRecipe::parse(text), ValueError);
    REQUIRE_THROWS_WITH(QuantRecipe::parse(text),
                        Catch::Contains("quant recipe") && Catch::Contains(key));
  };
  throws_naming(R"({"weight": {}})", "\"family\" is required");
  throws_naming(R"({"family": "tensorrt"})", "\"family\"");
  throws_naming(R"({"family": "nvidia", "bogus": 1})", "\"bogus\"");
  throws_naming(R"({"family": "nvidia", "weight": {"num_bits": "8"}})", "weight");
  throws_naming(R"({"family": "nvidia", "weight": {"num_bits": 8, "axis": 0, "learn_amax": true}})",
                "learn_amax");
  throws_naming(R"({"family": "nvidia", "input": {"bits": 8}})", "\"input.bits\"");
  throws_naming(R"({"family": "nvidia", "weight": 8})", "\"weight\"");
  throws_naming(R"({"family": "nvidia", "weight": {"num_bins": 1}})", "\"weight.num_bins\"");
  throws_naming(R"({"family": "torch_ao", "weight": {"quant_min": -8}})", "\"weight.quant_max\"");
  throws_naming(R"({"family": "torch_ao", "input": {"observer": "minmax", "dtype": "int8"}})",
                "\"input.dtype\"");
  throws_naming(
      R"({"family": "torch_ao", "weight": {"observer": "histogram", "qscheme": "per_channel_affine"}})",
      "\"weight.observer\"");
  throws_naming(
      R"({"family": "torch_ao", "input": {"quant_min": -300, "quant_max": 300, "dtype": "qint8"}})",
      "\"input\"");
  throws_naming(R"({"family": "lsq", "input": {"per_channel": true}})", "\"input.per_channel\"");
  // An input's axis 0 is the batch: each image would get its own calibrated range.
  throws_naming(R"({"family": "nvidia", "input": {"axis": 0}})", "\"input.axis\" is 0, the batch");
  throws_naming(R"({"family": "nvidia", "input": {"axis": [0, 1]}})", "\"input.axis\"");
  throws_naming(R"({"family": "torch_ao", "input": {"observer": "minmax",
                   "qscheme": "per_channel_affine"}})",
                "\"input.ch_axis\" 0 quantizes an input along its batch axis");
  throws_naming(R"({"family": "lsq", "weight": {"num_bits": 1}})", "\"weight.num_bits\"");
  throws_naming(R"({"family": "lsq", "weight": {"init": "kaiming"}})", "\"weight.init\"");
  throws_naming(R"({"family": "horizon", "weight": {"round_mode": "up"}})",
                "\"weight.round_mode\"");
  throws_naming(R"({"family": "aimet", "calibration": {"batches": 0}})", "\"calibration.batches\"");
  throws_naming(R"({"family": "aimet", "weight": {"bitwidth": 64}})", "\"weight.bitwidth\"");
  throws_naming(R"({"family": "nvidia", "calibration": {"method": "max"}})",
                "\"calibration.method\"");
  throws_naming(R"({"family": "nvidia", "calibration": {"percentile": 0}})",
                "\"calibration.percentile\"");
  throws_naming(R"({"family": "nvidia", "exclude": "fc"})", "\"exclude\"");
  throws_naming(R"({"family": "nvidia", "add": 1})", "\"add\"");
  throws_naming(R"({"family": "nvidia",)", "invalid JSON");
  throws_naming(R"([1, 2])", "JSON object");
}
