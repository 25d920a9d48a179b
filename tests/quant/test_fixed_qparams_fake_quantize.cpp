// FixedQParamsFakeQuantize / FixedQParamsObserver against PyTorch 1.13: the two default
// configurations (range -1..1 and 0..1) on inputs with ties, the edges of the range, -0.0 and
// out-of-range values (outputs and STE gradients as torch printed them), a qint8 configuration,
// the observer being a no-op, the switches, state dict keys (shared tensors), printouts and bad
// arguments. Expected values: default_fixed_qparams_range_neg1to1_fake_quant()(x) etc. in
// torch 1.13.0 (Debian), copied here.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/factory.h"
#include "ops/binary/binary.h"
#include "quant/modules/fixed_qparams_fake_quantize.h"
#include "test_modules_helpers.h"

using namespace qgrad;
using namespace qgrad::quant;
using namespace qgrad_qm_test;

namespace {

Tensor f32(const std::vector<float>& v) {
  return from_vector(v);
}

// x as given to torch: ties (127.5 steps), the range edges, -0.0, out-of-range values.
const std::vector<float> kX = {-1.5f,       -1.0f,        -0.99609375f, -0.00390625f, 0.0f,
                               0.00390625f, 0.005859375f, 0.5f,         0.9921875f,   0.99609375f,
                               1.0f,        2.0f,         -0.0f};

}  // namespace

TEST_CASE("FixedQParamsFakeQuantize matches torch.ao (range -1..1 and 0..1)", "[quant][modules]") {
  auto fq = std::make_shared<FixedQParamsFakeQuantize>(fixed_qparams_range_neg1to1_config());
  REQUIRE(fq->scale().item<float>() == 0.0078125f);
  REQUIRE(fq->zero_point().item<std::int64_t>() == 128);
  Tensor x = f32(kX).set_requires_grad(true);
  Tensor y = fq->forward(x);
  require_bitwise(y,
                  f32({-1.0f, -1.0f, -1.0f, 0.0f, 0.0f, 0.0f, 0.0078125f, 0.5f, 0.9921875f,
                       0.9921875f, 0.9921875f, 0.9921875f, 0.0f}),
                  "neg1to1 y");
  y.backward(ones({13}));
  require_bitwise(x.grad(), f32({0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1}), "neg1to1 dx");

  auto fq01 = std::make_shared<FixedQParamsFakeQuantize>(fixed_qparams_range_0to1_config());
  require_bitwise(fq01->forward(f32(kX)),
                  f32({0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.00390625f, 0.0078125f, 0.5f, 0.9921875f,
                       0.99609375f, 0.99609375f, 0.99609375f, 0.0f}),
                  "0to1 y");
  // torch: calculate_qparams() returns the fixed buffers.
  const ao::QParams qp = fq->calculate_qparams();
  CHECK(qp.scale.is_same(fq->scale()));
  CHECK(qp.zero_point.is_same(fq->zero_point()));

  // qint8 [-128, 127], scale 0.1, zero point 3 (torch values).
  FixedQParamsConfig c;
  c.scale = 0.1;
  c.zero_point = 3;
  c.dtype = ao::QuantDType::QInt8;
  c.quant_min = -128;
  c.quant_max = 127;
  auto q8 = std::make_shared<FixedQParamsFakeQuantize>(c);
  require_bitwise(q8->forward(f32({-13.0f, -12.86f, 0.05f, 0.15f, 12.4f, 12.5f, 13.0f})),
                  f32({-13.0f, -12.90000057220459f, 0.0f, 0.20000000298023224f, 12.40000057220459f,
                       12.40000057220459f, 12.40000057220459f}),
                  "qint8 y");
  CHECK(q8->repr().find("dtype=qint8, quant_min=-128, quant_max=127") != std::string::npos);
}

TEST_CASE("FixedQParamsFakeQuantize: no-op observer, switches, state dict, errors",
          "[quant][modules]") {
  auto fq = std::make_shared<FixedQParamsFakeQuantize>(fixed_qparams_range_neg1to1_config());
  const Tensor x = f32(kX);
  const Tensor y = fq->forward(x);
  // Observing changes nothing (the observer returns x and the qparams stay fixed).
  CHECK(fq->observer_enabled());
  CHECK(fq->activation_post_process()->forward(x).is_same(x));
  for (int i = 0; i < 3; ++i) fq->forward(mul(x, 10.0 * (i + 1)));
  CHECK(fq->scale().item<float>() == 0.0078125f);
  require_bitwise(fq->forward(x), y, "after observing other data");
  fq->disable_observer();
  require_bitwise(fq->forward(x), y, "observer off");
  fq->disable_fake_quant();
  CHECK(fq->forward(x).is_same(x));  // torch: fq(x) is x
  fq->start_calibration();
  CHECK_FALSE(fq->fake_quant_enabled());
  fq->finish_calibration(CalibrationOptions());
  CHECK(fq->fake_quant_enabled());

  // PyTorch's state_dict keys; the observer's buffers are the module's tensors.
  REQUIRE(fq->state_dict().keys() ==
          std::vector<std::string>{"fake_quant_enabled", "observer_enabled", "scale", "zero_point",
                                   "activation_post_process.scale",
                                   "activation_post_process.zero_point"});
  CHECK(fq->scale().shape() == Shape{1});
  CHECK(fq->scale().dtype() == kFloat32);
  CHECK(fq->zero_point().dtype() == kInt32);
  CHECK(fq->activation_post_process()->scale().is_same(fq->scale()));
  CHECK(fq->activation_post_process()->zero_point().is_same(fq->zero_point()));
  // torch: "fake_quant_enabled=tensor([1], dtype=torch.uint8), observer_enabled=..., scale=...,
  // zero_point=..., dtype=torch.quint8, quant_min=0, quant_max=255,
  // qscheme=torch.per_tensor_affine" (qgrad prints the values, not the tensor printouts).
  CHECK(fq->extra_repr() ==
        "fake_quant_enabled=1, observer_enabled=0, scale=0.0078125, zero_point=128, "
        "dtype=quint8, quant_min=0, quant_max=255, qscheme=per_tensor_affine");
  CHECK(fq->activation_post_process()->repr() == "FixedQParamsObserver()");

  // Bad arguments (torch: "Only per tensor quantization is supported").
  FixedQParamsConfig c = fixed_qparams_range_neg1to1_config();
  c.qscheme = ao::QScheme::PerChannelAffine;
  CHECK_THROWS_WITH(FixedQParamsFakeQuantize(c),
                    Catch::Contains("FixedQParamsFakeQuantize") &&
                        Catch::Contains("only per tensor quantization is supported"));
  c = fixed_qparams_range_neg1to1_config();
  c.scale = 0.0;
  CHECK_THROWS_AS(FixedQParamsFakeQuantize(c), ValueError);
  c.scale = std::nan("");
  CHECK_THROWS_AS(FixedQParamsObserver(c), ValueError);
  c = fixed_qparams_range_neg1to1_config();
  c.zero_point = 256;
  CHECK_THROWS_WITH(FixedQParamsFakeQuantize(c), Catch::Contains("zero_point 256"));
  c = fixed_qparams_range_neg1to1_config();
  c.quant_min = 10;
  c.quant_max = 10;
  CHECK_THROWS_AS(FixedQParamsFakeQuantize(c), ValueError);
}
