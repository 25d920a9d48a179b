// Int32 bias quantization (quant/modules/int32_bias.h): the fake quantization onto the int32 grid
// (values, ties, the int32 clamp, the straight-through gradient), the grid's scale from a
// layer's quantizers, QuantLinear / QuantConv2d forwards with the recipe's "bias": "int32", and
// the recipe key's validation.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/error.h"
#include "core/factory.h"
#include "nn/modules/conv.h"
#include "nn/modules/flatten.h"
#include "nn/modules/linear.h"
#include "nn/modules/sequential.h"
#include "ops/binary/binary.h"
#include "ops/conv/conv.h"
#include "ops/matmul/matmul.h"
#include "ops/reduce/reduce.h"
#include "quant/modules/calibrate.h"
#include "quant/modules/fake_quantize.h"
#include "quant/modules/frozen_quantizer_statistics.h"
#include "quant/modules/int32_bias.h"
#include "quant/modules/qdq_params.h"
#include "quant/modules/quant_conv2d.h"
#include "quant/modules/quant_linear.h"
#include "quant/modules/quant_recipe.h"
#include "quant/modules/quantize_model.h"

using namespace qgrad;
using namespace qgrad::quant;

namespace {

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// Conv 1->3 (bias), Flatten, Linear 3*4*4 -> 5 (bias).
std::shared_ptr<nn::Sequential> conv_linear_net() {
  Generator gen(21);
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(1, 3, 3), gen));
  m->push_back(std::make_shared<nn::Flatten>());
  m->push_back(std::make_shared<nn::Linear>(3 * 4 * 4, 5, gen));
  return m;
}

// conv_linear_net's quantized forward composed by hand: the float ops on the quantizers'
// outputs and the biases fake quantized onto their grids (x has 6 images).
Tensor composed_forward(nn::Sequential& model, const Tensor& x) {
  NoGradGuard no_grad;
  auto conv = model.at<QuantConv2d>(0);
  auto lin = model.at<QuantLinear>(2);
  const std::vector<float> cs = *int32_bias_scale(
      conv->input_quantizer().get(), conv->weight_quantizer().get(), 3, "test", "conv");
  const Tensor h =
      conv2d(conv->input_quantizer()->forward(x), conv->weight_quantizer()->forward(conv->weight()),
             fake_quantize_int32_bias(conv->bias(), cs), {1, 1}, {0, 0}, {1, 1}, 1);
  const std::vector<float> ls = *int32_bias_scale(lin->input_quantizer().get(),
                                                  lin->weight_quantizer().get(), 5, "test", "fc");
  return linear(lin->input_quantizer()->forward(h.reshape({6, 48})),
                lin->weight_quantizer()->forward(lin->weight()),
                fake_quantize_int32_bias(lin->bias(), ls));
}

}  // namespace

TEST_CASE("int32 bias: fake quantization onto the grid, its integers and gradient",
          "[quant][int32_bias]") {
  // Exact ties (1.25 / 0.5 = 2.5, 1.75 / 0.5 = 3.5) round half to even; -0.0 and a value far
  // beyond int32 at a tiny scale (clamped, no gradient).
  const std::vector<float> b{0.1f, 1.25f, 1.75f, -1.25f, -0.0f, 1e30f, -1e30f, 0.37f};
  const std::vector<float> s{0.01f, 0.5f, 0.5f, 0.5f, 0.25f, 1e-10f, 1e-10f, 3e-3f};
  Tensor bias = from_vector<float>(b);
  bias.set_requires_grad(true);
  const Tensor y = fake_quantize_int32_bias(bias, s);
  const std::vector<std::int32_t> q = int32_bias_values(bias, s);
  const std::vector<std::int32_t> want{
      10,
      2,
      4,
      -2,
      0,
      std::numeric_limits<std::int32_t>::max(),
      std::numeric_limits<std::int32_t>::min(),
      static_cast<std::int32_t>(std::nearbyint(0.37f * (1 / 3e-3f)))};
  REQUIRE(q == want);
  const std::vector<float> v = y.to_vector<float>();
  for (std::size_t c = 0; c < b.size(); ++c) {
    INFO("element " << c);
    // What DequantizeLinear computes from the integers: float(q) * s.
    CHECK(same_bits(v[c], static_cast<float>(q[c]) * s[c]));
  }
  sum(y * from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8})).backward();
  CHECK(bias.grad().to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 0, 0, 8});

  CHECK_THROWS_AS(fake_quantize_int32_bias(from_vector<float>({1, 2}), {0.1f}), ShapeError);
  CHECK_THROWS_WITH(int32_bias_values(from_vector<float>({std::nanf("")}), {0.1f}),
                    Catch::Contains("NaN"));
  CHECK_THROWS_AS(fake_quantize_int32_bias(from_vector<double>({1.0}), {0.1f}), DTypeError);
}

TEST_CASE("int32 bias: QuantLinear and QuantConv2d add the bias on the grid s_in * s_w",
          "[quant][int32_bias]") {
  Generator gen(4);
  const Tensor x = randn({6, 1, 6, 6}, gen);
  for (
      const char* recipe :
      {R"({"family": "pact", "weight": {"num_bits": 4}, "input": {"num_bits": 4}, "bias": "int32"})",
       R"({"family": "torch_ao", "bias": "int32"})", R"({"recipe": "lsq_w4a4", "bias": "int32"})",
       R"({"family": "nvidia", "bias": "int32", "calibration": {"batches": 0},
            "input": {"num_bits": 8, "amax": 3.0}, "weight": {"num_bits": 8, "amax": 0.5}})"}) {
    INFO(recipe);
    auto model = conv_linear_net();
    quantize_model(*model, QuantRecipe::parse(recipe));
    model->forward(x);  // observers / LSQ initialisation choose the scales
    const Tensor y = model->forward(x);
    auto conv = model->at<QuantConv2d>(0);
    auto lin = model->at<QuantLinear>(2);
    REQUIRE(conv->int32_bias());
    REQUIRE(lin->int32_bias());
    CHECK_THAT(lin->extra_repr(), Catch::EndsWith(", int32_bias=True"));

    // The grid's scales are the product of the exported input and weight scales.
    const std::vector<float> s = *int32_bias_scale(lin->input_quantizer().get(),
                                                   lin->weight_quantizer().get(), 5, "test", "fc");
    const QdqParams in = any_qdq_params(*lin->input_quantizer(), "test", "in");
    const QdqParams w = any_qdq_params(*lin->weight_quantizer(), "test", "w");
    for (std::size_t c = 0; c < 5; ++c)
      CHECK(same_bits(s[c], in.scale[0] * w.scale[w.scale.size() == 1 ? 0 : c]));

    // The forward is the float layer on the quantized operands and the grid bias.
    const Tensor want = composed_forward(*model, x);
    CHECK(y.to_vector<float>() == want.to_vector<float>());
    // ... and differs from the float bias somewhere.
    CHECK(fake_quantize_int32_bias(lin->bias(), s).to_vector<float>() !=
          lin->bias().to_vector<float>());
  }
}

TEST_CASE("int32 bias: every family calibrates with the float bias, then trains on the grid",
          "[quant][int32_bias]") {
  Generator gen(8);
  const Tensor x = randn({6, 1, 6, 6}, gen);
  for (const char* recipe :
       {R"({"family": "nvidia", "bias": "int32", "calibration": {"batches": 2}})",
        R"({"family": "aimet", "bias": "int32", "calibration": {"batches": 2}})",
        R"({"family": "horizon", "bias": "int32", "calibration": {"batches": 2}})",
        R"({"family": "torch_ao", "bias": "int32", "calibration": {"batches": 2}})"}) {
    INFO(recipe);
    auto model = conv_linear_net();
    const QuantRecipe r = QuantRecipe::parse(recipe);
    quantize_model(*model, r);
    calibrate_model(
        *model, 2, [&](std::int64_t) { model->forward(x); }, r.calibration_options());
    const Tensor y = model->forward(x);
    sum(y).backward();
    auto lin = model->at<QuantLinear>(2);
    REQUIRE(lin->bias().grad().defined());
    const std::optional<std::vector<float>> s = int32_bias_scale(
        lin->input_quantizer().get(), lin->weight_quantizer().get(), 5, "test", "fc");
    REQUIRE(s);
    // The observers stop moving, so the layers and the composition see the same scales.
    FrozenQuantizerStatistics frozen(*model);
    const Tensor want = composed_forward(*model, x);
    NoGradGuard no_grad;
    CHECK(model->forward(x).to_vector<float>() == want.to_vector<float>());
  }
}

TEST_CASE("int32 bias: a bias stays float while a quantizer passes values through",
          "[quant][int32_bias]") {
  auto model = conv_linear_net();
  quantize_model(*model, QuantRecipe::parse(R"({"family": "torch_ao", "bias": "int32",
                                                 "input": {"observer": "moving_average_minmax"}})"));
  Generator gen(4);
  const Tensor x = randn({2, 1, 6, 6}, gen);
  model->forward(x);
  auto lin = model->at<QuantLinear>(2);
  REQUIRE(
      int32_bias_scale(lin->input_quantizer().get(), lin->weight_quantizer().get(), 5, "t", "fc"));
  auto in = std::dynamic_pointer_cast<FakeQuantize>(lin->input_quantizer());
  REQUIRE(in != nullptr);
  in->disable_fake_quant();
  CHECK_FALSE(
      int32_bias_scale(lin->input_quantizer().get(), lin->weight_quantizer().get(), 5, "t", "fc"));
  CHECK_FALSE(int32_bias_scale(nullptr, lin->weight_quantizer().get(), 5, "t", "fc"));
  // Weight scales that are not one per output channel (5 here, 4 asked) are an error.
  in->enable_fake_quant();
  CHECK_THROWS_WITH(
      int32_bias_scale(lin->input_quantizer().get(), lin->weight_quantizer().get(), 4, "test op",
                       "fc"),
      Catch::Contains("test op: fc") && Catch::Contains("one weight scale per output"));
}

TEST_CASE("int32 bias: the recipe key", "[quant][int32_bias]") {
  CHECK(QuantRecipe::parse(R"({"family": "lsq", "bias": "int32"})").int32_bias());
  CHECK_FALSE(QuantRecipe::parse(R"({"family": "lsq"})").int32_bias());
  const QuantRecipe r = QuantRecipe::parse(R"({"family": "pact", "bias": "int32"})");
  CHECK(r.to_json().at("bias") == "int32");
  CHECK(QuantRecipe::from_json(r.to_json()).int32_bias());
  CHECK_THROWS_WITH(QuantRecipe::parse(R"({"family": "lsq", "bias": "int8"})"),
                    Catch::Contains("\"bias\"") && Catch::Contains("int32"));
  CHECK_THROWS_WITH(
      QuantRecipe::parse(R"({"family": "torch_ao", "bias": "int32", "fuse_bn": true})"),
      Catch::Contains("fuse_bn"));
  // The default keeps a float bias on every layer.
  auto model = conv_linear_net();
  quantize_model(*model, QuantRecipe::parse(R"({"family": "torch_ao"})"));
  CHECK_FALSE(model->at<QuantLinear>(2)->int32_bias());
}
