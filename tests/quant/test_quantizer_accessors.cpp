// Accessors and setters a user of the quantizers needs without a state_dict round trip:
// min_val() / max_val() through the observer base class (every observer kind), the amax a
// TensorQuantizer used last (dynamic per tensor / per channel, static, scale_amax), and
// FakeQuantize's scale / zero-point setters (per tensor and per channel, frozen with the observer
// off, then fake quantization with exactly those values as torch.ao's FakeQuantize after
// fq.scale.copy_(...); validation errors leave the buffers unchanged).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <memory>

#include "core/factory.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"
#include "quant/modules/fake_quantize.h"
#include "quant/modules/observer_module.h"
#include "quant/modules/tensor_quantizer.h"
#include "quant/nvidia/tensor_quant.h"
#include "quant/observer/per_channel_minmax_observer.h"
#include "quant/torch_ao/fake_quantize.h"
#include "test_modules_helpers.h"

using namespace qgrad;
using namespace qgrad::quant;
using namespace qgrad_qm_test;

TEST_CASE("observers: min_val / max_val through the base class", "[quant][observer]") {
  const Tensor x = from_vector(std::vector<float>{-1.5f, 0.25f, 3.0f, -0.5f, 2.0f, 1.0f}, {2, 3});
  for (ObserverKind kind :
       {ObserverKind::MinMax, ObserverKind::MovingAverageMinMax, ObserverKind::PerChannelMinMax,
        ObserverKind::MovingAveragePerChannelMinMax, ObserverKind::Histogram}) {
    INFO(observer_kind_name(kind));
    ObserverConfig c;
    c.kind = kind;
    if (is_per_channel(kind)) c.options = ao::per_channel_affine_options();
    std::unique_ptr<ao::UniformQuantizationObserver> obs = c.make();
    const ao::UniformQuantizationObserver& base = *obs;
    if (is_per_channel(kind)) {
      CHECK(base.min_val().shape() == Shape{0});  // sized by the first batch
    } else {
      CHECK(base.min_val().dim() == 0);
      CHECK(base.min_val().item<float>() == std::numeric_limits<float>::infinity());
      CHECK(base.max_val().item<float>() == -std::numeric_limits<float>::infinity());
    }
    obs->forward(x);
    CHECK(base.min_val().dtype() == kFloat32);
    if (is_per_channel(kind)) {
      CHECK(base.min_val().to_vector<float>() == std::vector<float>{-1.5f, -0.5f});
      CHECK(base.max_val().to_vector<float>() == std::vector<float>{3.0f, 2.0f});
    } else {
      CHECK(base.min_val().item<float>() == -1.5f);
      CHECK(base.max_val().item<float>() == 3.0f);
    }
    // The base's handles are the ones the observer module registers as buffers.
    Observer module(c);
    module.forward(x);
    CHECK(module.min_val().to_vector<float>() == module.observer().min_val().to_vector<float>());
    CHECK(module.named_buffers().at("max_val").is_same(module.max_val()));
    obs->reset_min_max_vals();
    if (!is_per_channel(kind))
      CHECK(base.min_val().item<float>() == std::numeric_limits<float>::infinity());
  }
}

TEST_CASE("TensorQuantizer: last_amax is the amax the last forward used",
          "[quant][modules][nvidia]") {
  using nvidia::QuantDescriptor;
  using nvidia::QuantDescriptorOptions;
  Generator gen(3);
  const Tensor x = mul(randn({4, 3, 5}, gen), 2.0);
  const Tensor x2 = mul(randn({4, 3, 5}, gen), 0.5);

  auto q = std::make_shared<TensorQuantizer>();  // dynamic per tensor
  CHECK_FALSE(q->last_amax().defined());
  q->forward(x);
  REQUIRE(q->last_amax().defined());
  require_bitwise(q->last_amax(), amax(abs(x)), "dynamic per-tensor amax");
  CHECK(q->last_amax().dim() == 0);
  CHECK_FALSE(q->has_amax());  // still dynamic: the buffer stays unset
  q->forward(x2);
  require_bitwise(q->last_amax(), amax(abs(x2)), "the latest batch");
  CHECK_FALSE(q->last_amax().requires_grad());
  // The output is fake_tensor_quant with exactly that amax.
  const Tensor y = q->forward(x);
  require_bitwise(y, nvidia::fake_tensor_quant(x, q->last_amax(), 8, false, false),
                  "output with last_amax");

  // Per channel along axis 1: the keepdim shape.
  auto pc = std::make_shared<TensorQuantizer>(QuantDescriptor(QuantDescriptorOptions().axis(1)));
  pc->forward(x);
  CHECK(pc->last_amax().shape() == Shape{1, 3, 1});
  require_bitwise(pc->last_amax(), amax(abs(x), {0, 2}, true), "per-channel dynamic amax");

  // scale_amax is included (it is part of the amax the quantizer uses).
  auto sc =
      std::make_shared<TensorQuantizer>(QuantDescriptor(QuantDescriptorOptions().scale_amax(0.5)));
  sc->forward(x);
  require_bitwise(sc->last_amax(), mul(amax(abs(x)), 0.5), "scale_amax");

  // A static amax: the buffer's value.
  auto st = std::make_shared<TensorQuantizer>();
  st->set_amax(1.25);
  st->forward(x);
  CHECK(st->last_amax().item<float>() == 1.25f);

  // Quantization off: nothing used, nothing changes.
  auto off = std::make_shared<TensorQuantizer>();
  off->disable_quant();
  off->forward(x);
  CHECK_FALSE(off->last_amax().defined());
}

TEST_CASE("FakeQuantize: set_qparams / set_scale / set_zero_point per tensor", "[quant][modules]") {
  auto fq = std::make_shared<FakeQuantize>(default_fake_quant_config());  // quint8 [0, 127]
  const Tensor x = from_vector(std::vector<float>{-1.0f, -0.3f, 0.0f, 0.26f, 0.5f, 2.0f});
  fq->disable_observer();
  fq->set_qparams(0.01, 20);
  CHECK(fq->scale().shape() == Shape{1});
  CHECK(fq->scale().dtype() == kFloat32);
  CHECK(fq->zero_point().dtype() == kInt32);
  CHECK(fq->scale().item<float>() == 0.01f);
  CHECK(fq->zero_point().item<std::int64_t>() == 20);
  // The registered buffers are the same tensors (state_dict sees the new values).
  CHECK(fq->state_dict().at("scale").item<float>() == 0.01f);
  require_bitwise(fq->forward(x), ao::fake_quantize_per_tensor_affine(x, 0.01, 20, 0, 127),
                  "forward with the set qparams");
  // Tensors of one element, any shape and floating / integer dtype.
  fq->set_qparams(scalar_tensor(0.05, TensorOptions().dtype(kFloat64)),
                  full({1, 1}, 3, TensorOptions().dtype(kInt64)));
  CHECK(fq->scale().shape() == Shape{1});
  CHECK(fq->zero_point().item<std::int64_t>() == 3);
  fq->set_scale(scalar_tensor(0.02));
  fq->set_zero_point(full({1}, 7, TensorOptions().dtype(kInt32)));
  require_bitwise(fq->forward(x), ao::fake_quantize_per_tensor_affine(x, 0.02, 7, 0, 127),
                  "after set_scale / set_zero_point");
  // With the observer on, the next forward recomputes them (as PyTorch).
  fq->enable_observer();
  fq->forward(x);
  CHECK(fq->scale().item<float>() != 0.02f);

  // Errors name the op and the argument; nothing changes.
  fq->disable_observer();
  fq->set_qparams(0.02, 7);
  CHECK_THROWS_WITH(fq->set_qparams(0.0, 7),
                    Catch::Contains("FakeQuantize::set_qparams") && Catch::Contains("scale"));
  CHECK_THROWS_AS(fq->set_qparams(-0.1, 7), ValueError);
  CHECK_THROWS_AS(fq->set_qparams(std::nan(""), 7), ValueError);
  CHECK_THROWS_AS(fq->set_qparams(std::numeric_limits<double>::infinity(), 7), ValueError);
  CHECK_THROWS_AS(fq->set_qparams(1e-50, 7), ValueError);  // 0 as float32
  CHECK_THROWS_WITH(fq->set_qparams(0.1, 128), Catch::Contains("zero_point") &&
                                                   Catch::Contains("[0, 127]") &&
                                                   Catch::Contains("128"));
  CHECK_THROWS_AS(fq->set_qparams(0.1, -1), ValueError);
  CHECK_THROWS_AS(fq->set_zero_point(full({1}, 2.5, TensorOptions().dtype(kFloat32))), ValueError);
  CHECK_THROWS_AS(fq->set_qparams(full({2}, 0.1), full({2}, 1, TensorOptions().dtype(kInt32))),
                  ShapeError);
  CHECK_THROWS_AS(fq->set_scale(full({2}, 0.1)), ShapeError);
  CHECK_THROWS_AS(fq->set_scale(full({1}, 1, TensorOptions().dtype(kInt32))), DTypeError);
  CHECK_THROWS_AS(fq->set_scale(Tensor()), ValueError);
  CHECK(fq->scale().item<float>() == 0.02f);
  CHECK(fq->zero_point().item<std::int64_t>() == 7);
}

TEST_CASE("FakeQuantize: set_qparams per channel", "[quant][modules]") {
  auto fq = std::make_shared<FakeQuantize>(default_per_channel_weight_fake_quant_config());
  CHECK(fq->scale().shape() == Shape{0});  // not sized yet
  const Tensor s = from_vector(std::vector<float>{0.01f, 0.02f, 0.5f});
  const Tensor z = from_vector(std::vector<std::int32_t>{0, -3, 4});
  // A per-channel quantizer needs [C] tensors; set_scale alone cannot size the buffers.
  CHECK_THROWS_AS(fq->set_qparams(0.1, 0), ValueError);
  CHECK_THROWS_AS(fq->set_scale(s), ShapeError);
  fq->set_qparams(s, z);
  CHECK(fq->scale().shape() == Shape{3});
  CHECK(fq->named_buffers().at("zero_point").is_same(fq->zero_point()));
  CHECK(fq->state_dict().at("zero_point").to_vector<std::int32_t>() ==
        std::vector<std::int32_t>{0, -3, 4});
  fq->disable_observer();
  Generator gen(2);
  const Tensor w = randn({3, 2, 2}, gen);
  require_bitwise(fq->forward(w), ao::fake_quantize_per_channel_affine(w, s, z, 0, -128, 127),
                  "per-channel forward with the set qparams");
  // Same C: in place; another C: resized, as load_state_dict would.
  fq->set_scale(from_vector(std::vector<double>{0.1, 0.2, 0.3}));
  CHECK(fq->scale().to_vector<float>() == std::vector<float>{0.1f, 0.2f, 0.3f});
  fq->set_qparams(full({5}, 0.25), zeros({5}, TensorOptions().dtype(kInt64)));
  CHECK(fq->scale().shape() == Shape{5});
  CHECK(fq->zero_point().shape() == Shape{5});
  // Shapes and values per channel.
  CHECK_THROWS_AS(fq->set_qparams(full({2, 2}, 0.1), zeros({4}, TensorOptions().dtype(kInt32))),
                  ShapeError);
  CHECK_THROWS_AS(fq->set_qparams(full({3}, 0.1), zeros({2}, TensorOptions().dtype(kInt32))),
                  ShapeError);
  CHECK_THROWS_AS(fq->set_zero_point(zeros({3}, TensorOptions().dtype(kInt32))), ShapeError);
  CHECK_THROWS_WITH(fq->set_qparams(from_vector(std::vector<float>{0.1f, 0.0f}),
                                    zeros({2}, TensorOptions().dtype(kInt32))),
                    Catch::Contains("scale must be finite and > 0"));
  CHECK_THROWS_WITH(fq->set_qparams(full({2}, 0.1), from_vector(std::vector<std::int32_t>{0, 200})),
                    Catch::Contains("[-128, 127]") && Catch::Contains("200"));
  CHECK(fq->scale().shape() == Shape{5});
}
