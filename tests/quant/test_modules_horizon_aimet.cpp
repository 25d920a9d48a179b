// Tests of the Horizon FakeQuantize module (quant/modules/horizon_fake_quantize.h) against the
// horizon::FakeQuantizer state class over several batches (every dtype, per channel, rounding
// modes, saturate), its states, factory, printout, state dict and errors; and of the AIMET
// Quantize / QuantizeDequantize modules (quant/modules/aimet_quantizer.h): the seed examples,
// forward and range-learning gradients against aimet::AffineQuantizer, the compute_encodings
// scope, checkpoints and errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>

#include "core/factory.h"
#include "ops/binary/binary.h"
#include "quant/aimet/affine_quantize.h"
#include "quant/horizon/horizon_fake_quantize.h"
#include "quant/horizon/horizon_fake_quantizer.h"
#include "quant/modules/aimet_quantizer.h"
#include "quant/modules/horizon_fake_quantize.h"
#include "test_modules_helpers.h"

using namespace qgrad;
using namespace qgrad::quant;
using namespace qgrad_qm_test;
using horizon::FakeQuantizeOptions;
using horizon::QDType;
using horizon::RoundMode;

TEST_CASE("quant.modules: HorizonFakeQuantize equals horizon::FakeQuantizer over batches",
          "[quant][modules][horizon]") {
  const std::vector<FakeQuantizeOptions> configs{
      FakeQuantizeOptions(),
      FakeQuantizeOptions().dtype(QDType::QInt16),
      FakeQuantizeOptions().dtype(QDType::QInt4).round_mode(RoundMode::HalfUp),
      FakeQuantizeOptions().dtype(QDType::QUInt4).saturate(false),
      FakeQuantizeOptions().per_channel(1, 3),
      FakeQuantizeOptions().per_channel(0, 4).averaging_constant(0.5).saturate(false),
  };
  for (std::size_t i = 0; i < configs.size(); ++i) {
    INFO("config " << i);
    Generator gen(100 + i);
    auto mod = std::make_shared<HorizonFakeQuantize>(configs[i]);
    horizon::FakeQuantizer ref(configs[i]);
    for (int k = 0; k < 5; ++k) {
      INFO("step " << k);
      if (k == 3) {
        mod->set_state(HorizonFakeQuantize::State::Validation);
        ref.set_state(horizon::FakeQuantizer::State::Validation);
      }
      const Tensor x0 = randn({4, 3, 2}, gen) * (1.0 + k);
      const Tensor dy = randn({4, 3, 2}, gen);
      const Tensor a = x0.clone().set_requires_grad(true), b = x0.clone().set_requires_grad(true);
      Tensor ya = mod->forward(a), yb = ref.forward(b);
      ya.backward(dy);
      yb.backward(dy);
      require_bitwise(ya, yb, "output");
      require_bitwise(a.grad(), b.grad(), "dx");
      require_bitwise(mod->scale(), ref.scale(), "scale");
    }
  }
}

TEST_CASE("quant.modules: HorizonFakeQuantize states, factory, printout and checkpoint",
          "[quant][modules][horizon]") {
  Generator gen(3);
  auto make = HorizonFakeQuantize::with_args(FakeQuantizeOptions().per_channel(0, 4));
  auto q = make();
  REQUIRE(make().get() != q.get());
  REQUIRE(q->state() == HorizonFakeQuantize::State::QAT);
  REQUIRE(q->state_dict().keys() ==
          std::vector<std::string>{"fake_quant_enabled", "observer_enabled", "scale", "zero_point",
                                   "activation_post_process.eps", "activation_post_process.min_val",
                                   "activation_post_process.max_val"});
  REQUIRE(q->repr() ==
          "HorizonFakeQuantize(\n  dtype=qint8, quant_min=-128, quant_max=127, ch_axis=0, "
          "saturate=True, round_mode=half_to_even, averaging_constant=0.01, state=QAT, "
          "scale=[1.0, 1.0, 1.0, 1.0], zero_point=[0, 0, 0, 0]\n  (activation_post_process): "
          "MovingAveragePerChannelMinMaxObserver(min_val=[], max_val=[])\n)");
  // Calibration observes only (x passes through), then QAT.
  const Tensor x = randn({4, 6}, gen);
  q->start_calibration();
  REQUIRE(q->state() == HorizonFakeQuantize::State::Calibration);
  require_bitwise(q->forward(x), x, "calibration passes x through");
  q->finish_calibration(CalibrationOptions());
  REQUIRE(q->state() == HorizonFakeQuantize::State::QAT);
  require_bitwise(q->scale(), q->calculate_scale(), "scale from the statistics");
  // Validation uses the fixed scale; the output equals the functional op.
  q->set_state(HorizonFakeQuantize::State::Validation);
  const Tensor before = q->scale().clone();
  const Tensor y = q->forward(x * 10.0);
  require_bitwise(q->scale(), before, "scale fixed in validation");
  require_bitwise(y, horizon::fake_quantize(x * 10.0, before, QDType::QInt8, 0), "validation");
  // Checkpoint into a fresh module (its per-channel observer statistics are still empty).
  auto fresh = make();
  checkpoint_round_trip(*q, *fresh);
  REQUIRE(fresh->state() == HorizonFakeQuantize::State::Validation);
  require_bitwise(fresh->forward(x), q->forward(x), "after load");
  // set_qparams.
  q->set_qparams({0.5, 0.25, 0.125, 1.0});
  REQUIRE(q->scale().to_vector<float>() == std::vector<float>{0.5f, 0.25f, 0.125f, 1.0f});
  REQUIRE_THROWS_WITH(q->set_qparams({0.5}),
                      Catch::Contains("set_qparams") && Catch::Contains("4 elements"));
  REQUIRE_THROWS_WITH(q->set_qparams(full({4}, 0.5), ones({4})), Catch::Contains("symmetric"));
  REQUIRE_THROWS_AS(q->set_qparams({0.5, 0.25, -1.0, 1.0}), ValueError);
  // Bad configurations and batches.
  REQUIRE_THROWS_WITH(HorizonFakeQuantize(FakeQuantizeOptions().per_channel(0, 0)),
                      Catch::Contains("HorizonFakeQuantize") && Catch::Contains("channel_len"));
  auto idle = std::make_shared<HorizonFakeQuantize>();
  idle->start_calibration();
  REQUIRE_THROWS_WITH(idle->finish_calibration(CalibrationOptions()), Catch::Contains("no data"));
  auto three = std::make_shared<HorizonFakeQuantize>(FakeQuantizeOptions().per_channel(0, 3));
  REQUIRE_THROWS_AS(three->forward(randn({4, 2}, gen)), ShapeError);
}

TEST_CASE("quant.modules: AIMET Quantize and QuantizeDequantize reproduce the seed examples",
          "[quant][modules][aimet]") {
  auto sym = std::make_shared<AimetQuantize>(Shape{}, 8, true);
  sym->set_range(-12.8, 12.7);
  const Tensor xs = from_vector<float>({2.57f, -2.312f, 0.153f, 0.205f}, {2, 2});
  const aimet::QuantizedTensor qs = sym->forward(xs);
  REQUIRE(qs.data().to_vector<float>() == std::vector<float>{26, -23, 2, 2});
  REQUIRE(qs.quantized_repr().dtype() == kInt8);
  // dequantize() of the module's result: (q + offset) * scale with scale 25.5 / 255.
  const std::vector<float> deq = qs.dequantize().data().to_vector<float>();
  const std::vector<float> want_deq{2.6f, -2.3f, 0.2f, 0.2f};
  for (std::size_t i = 0; i < 4; ++i) REQUIRE(deq[i] == Approx(want_deq[i]).margin(1e-5));
  REQUIRE(sym->repr() == "Quantize(shape=(), qmin=-128, qmax=127, symmetric=True)");

  auto asym = std::make_shared<AimetQuantizeDequantize>(Shape{}, 8, false);
  asym->set_range(-10, 41);
  const Tensor xa = from_vector<float>({0.39f, 51.0f, 3.521f, 9.41f}, {2, 2});
  const aimet::DequantizedTensor d = asym->quantize_dequantize(xa);
  REQUIRE(d.quantize().data().to_vector<float>() == std::vector<float>{52, 255, 68, 97});
  REQUIRE(d.quantize().quantized_repr().dtype() == kUInt8);
  const std::vector<float> dv = asym->forward(xa).to_vector<float>();
  const std::vector<float> want{0.4f, 41.0f, 3.6f, 9.4f};
  for (std::size_t i = 0; i < 4; ++i) REQUIRE(dv[i] == Approx(want[i]).margin(1e-5));
  REQUIRE(asym->repr() == "QuantizeDequantize(shape=(), qmin=0, qmax=255, symmetric=False)");
}

TEST_CASE("quant.modules: AIMET QuantizeDequantize forward and range-learning gradients",
          "[quant][modules][aimet]") {
  Generator gen(9);
  const Tensor w = randn({4, 2, 3, 3}, gen);
  auto qdq = std::make_shared<AimetQuantizeDequantize>(Shape{4, 1, 1, 1}, 4, true);
  aimet::AffineQuantizer ref({4, 1, 1, 1}, 4, true);
  const Tensor lo = full({4, 1, 1, 1}, -1.2), hi = full({4, 1, 1, 1}, 1.1);
  qdq->set_range(lo, hi);
  ref.set_range(lo, hi);
  REQUIRE(qdq->named_parameters().keys() == std::vector<std::string>{"min", "max"});
  const Tensor a = w.clone().set_requires_grad(true), b = w.clone().set_requires_grad(true);
  Tensor ya = qdq->forward(a), yb = ref.quantize_dequantize(b).data();
  require_bitwise(ya, yb, "forward");
  require_bitwise(
      ya, aimet::quantize_dequantize(w, ref.get_scale().detach(), ref.get_offset().detach(), -8, 7),
      "functional");
  const Tensor dy = randn({4, 2, 3, 3}, gen);
  ya.backward(dy);
  yb.backward(dy);
  require_bitwise(a.grad(), b.grad(), "dx");
  require_bitwise(qdq->min().grad(), ref.min().grad(), "dmin");
  require_bitwise(qdq->max().grad(), ref.max().grad(), "dmax");
  REQUIRE(qdq->min().grad().shape() == Shape{4, 1, 1, 1});
}

TEST_CASE("quant.modules: AIMET compute_encodings scope, calibration and checkpoints",
          "[quant][modules][aimet]") {
  Generator gen(10);
  const Tensor b0 = randn({5, 3}, gen), b1 = randn({5, 3}, gen) * 2.0;
  auto qdq = std::make_shared<AimetQuantizeDequantize>(Shape{}, 8, false);
  REQUIRE_FALSE(qdq->is_initialized());
  REQUIRE_THROWS_WITH(qdq->forward(b0),
                      Catch::Contains("QuantizeDequantize") && Catch::Contains("not initialized"));
  aimet::AffineQuantizer ref({}, 8, false);
  {
    AimetComputeEncodings scope = qdq->compute_encodings();
    auto ref_scope = ref.compute_encodings();
    require_bitwise(qdq->forward(b0), ref.quantize_dequantize(b0).data(), "batch encoding");
    qdq->forward(b1);
    ref.quantize_dequantize(b1);
  }
  REQUIRE(qdq->is_initialized());
  REQUIRE(qdq->state_dict().at("initialized").item<int>() == 1);
  require_bitwise(qdq->min(), ref.min(), "min from statistics");
  require_bitwise(qdq->max(), ref.max(), "max from statistics");
  // An exception while the scope is open keeps the range.
  const Tensor keep = qdq->max().detach().clone();
  try {
    AimetComputeEncodings scope = qdq->compute_encodings();
    qdq->forward(b1 * 100.0);
    throw std::runtime_error("abort");
  } catch (const std::runtime_error&) {
  }
  require_bitwise(qdq->max(), keep, "range kept after an exception");
  // Checkpoint: a fresh module quantizes without set_range.
  auto fresh = std::make_shared<AimetQuantizeDequantize>(Shape{}, 8, false);
  checkpoint_round_trip(*qdq, *fresh);
  require_bitwise(fresh->forward(b0), qdq->forward(b0), "after load");
  // Calibratable.
  auto cal = std::make_shared<AimetQuantize>(Shape{}, 8, true);
  cal->start_calibration();
  cal->forward(b0);
  cal->finish_calibration(CalibrationOptions());
  REQUIRE(cal->is_initialized());
  auto idle = std::make_shared<AimetQuantize>(Shape{}, 8, true);
  idle->start_calibration();
  REQUIRE_THROWS_WITH(idle->finish_calibration(CalibrationOptions()),
                      Catch::Contains("Quantize") && Catch::Contains("no data"));
  REQUIRE_FALSE(idle->is_initialized());
  // Bad arguments.
  REQUIRE_THROWS_AS(AimetQuantizeDequantize(Shape{}, 0, true), ValueError);
  REQUIRE_THROWS_AS(AimetQuantizeDequantize(Shape{0}, 8, true), ShapeError);
  auto pc = std::make_shared<AimetQuantizeDequantize>(Shape{3, 1}, 8, true);
  pc->set_range(full({3, 1}, -1.0), full({3, 1}, 1.0));
  REQUIRE_THROWS_AS(pc->forward(randn({4, 2}, gen)), ShapeError);
}
