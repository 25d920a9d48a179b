// Tests of the NVIDIA TensorQuantizer module (quant/modules/tensor_quantizer.h): forward against
// the functional quantizers (per tensor, per channel, dynamic, calibrated, unsigned, narrow
// range, 4-bit, FP8, blocks, real quantization), the calibration flow with max and histogram
// calibrators (entropy / mse / percentile), learn_amax and its gradients, switches, state dicts
// and checkpoint round trips, printouts and errors.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"
#include "quant/learnable/learnable_clip.h"
#include "quant/modules/tensor_quantizer.h"
#include "quant/nvidia/block_quant.h"
#include "quant/nvidia/calibrator.h"
#include "quant/nvidia/tensor_quant.h"
#include "test_modules_helpers.h"

using namespace qgrad;
using namespace qgrad::quant;
using namespace qgrad::nvidia;
using namespace qgrad_qm_test;

namespace {

QuantDescriptor desc(const QuantDescriptorOptions& o = QuantDescriptorOptions()) {
  return QuantDescriptor(o);
}

Tensor absmax(const Tensor& x) {
  return amax(abs(x));
}

}  // namespace

TEST_CASE("quant.modules: TensorQuantizer dynamic per-tensor and per-channel forward",
          "[quant][modules][nvidia]") {
  Generator gen(1);
  const Tensor x = (randn({4, 3, 5}, gen) * 2.0).set_requires_grad(true);
  auto q = std::make_shared<TensorQuantizer>();
  REQUIRE(q->repr() ==
          "TensorQuantizer(8bit fake per-tensor amax=dynamic calibrator=MaxCalibrator quant)");
  Tensor y = q->forward(x);
  // The descriptor's narrow_range defaults to false: [-128, 127].
  require_bitwise(y, fake_tensor_quant(x.detach(), absmax(x.detach()), 8, false, false),
                  "per-tensor dynamic");
  const Tensor dy = randn({4, 3, 5}, gen);
  y.backward(dy);
  require_bitwise(x.grad(), dy, "STE gradient (nothing clipped with a dynamic amax)");
  REQUIRE_FALSE(q->has_amax());

  // Per channel along axis 1: amax keeps dim 1.
  auto pc = std::make_shared<TensorQuantizer>(desc(QuantDescriptorOptions().axis(1)));
  const Tensor a1 = amax(abs(x.detach()), {0, 2}, true);
  require_bitwise(pc->forward(x.detach()), fake_tensor_quant(x.detach(), a1, 8, false, false),
                  "per-channel dynamic");
  // Negative axis, tuple axes.
  auto neg = std::make_shared<TensorQuantizer>(desc(QuantDescriptorOptions().axis(-1)));
  require_bitwise(
      neg->forward(x.detach()),
      fake_tensor_quant(x.detach(), amax(abs(x.detach()), {0, 1}, true), 8, false, false),
      "axis -1");
  auto tup = std::make_shared<TensorQuantizer>(
      desc(QuantDescriptorOptions().axis(QuantAxis::tuple({0, 2}))));
  require_bitwise(tup->forward(x.detach()),
                  fake_tensor_quant(x.detach(), amax(abs(x.detach()), {1}, true), 8, false, false),
                  "axis (0, 2)");
  REQUIRE(tup->extra_repr() == "8bit fake axis=(0, 2) amax=dynamic calibrator=MaxCalibrator quant");
  // Non-contiguous input.
  const Tensor xt = randn({5, 4}, gen).transpose(0, 1);
  require_bitwise(q->forward(xt), q->forward(xt.contiguous()), "transposed input");
  // Axis out of range for the input.
  auto far = std::make_shared<TensorQuantizer>(desc(QuantDescriptorOptions().axis(3)));
  REQUIRE_THROWS_AS(far->forward(x.detach()), IndexError);
}

TEST_CASE(
    "quant.modules: TensorQuantizer descriptor options (amax, unsigned, narrow, bits, "
    "scale_amax, FP8, real quantization)",
    "[quant][modules][nvidia]") {
  Generator gen(2);
  const Tensor x = randn({6, 7}, gen);
  const Tensor a = scalar_tensor(1.5);
  auto fixed = std::make_shared<TensorQuantizer>(desc(QuantDescriptorOptions().amax(1.5)));
  REQUIRE(fixed->has_amax());
  require_bitwise(fixed->forward(x), fake_tensor_quant(x, a, 8, false, false), "fixed amax");
  REQUIRE(fixed->extra_repr() == "8bit fake per-tensor amax=1.5000 calibrator=MaxCalibrator quant");

  auto narrow4 = std::make_shared<TensorQuantizer>(
      desc(QuantDescriptorOptions().num_bits(4).narrow_range(true).amax(1.5)));
  require_bitwise(narrow4->forward(x), fake_tensor_quant(x, a, 4, false, true), "4-bit narrow");
  REQUIRE(narrow4->extra_repr().find("4bit narrow fake") == 0);

  const Tensor ax = abs(x);
  auto uns = std::make_shared<TensorQuantizer>(desc(QuantDescriptorOptions().is_unsigned(true)));
  require_bitwise(uns->forward(ax), fake_tensor_quant(ax, absmax(ax), 8, true, false), "unsigned");
  REQUIRE_THROWS_AS(uns->forward(x), ValueError);  // negative input

  auto scaled =
      std::make_shared<TensorQuantizer>(desc(QuantDescriptorOptions().amax(1.5).scale_amax(0.5)));
  require_bitwise(scaled->forward(x), fake_tensor_quant(x, scalar_tensor(0.75), 8, false, false),
                  "scale_amax");
  REQUIRE(scaled->extra_repr().find("amax=1.5000 *0.5 ") != std::string::npos);

  auto fp8 =
      std::make_shared<TensorQuantizer>(desc(QuantDescriptorOptions().num_bits(NumBits(4, 3))));
  require_bitwise(fp8->forward(x), scaled_e4m3(x, absmax(x)), "E4M3 dynamic");
  REQUIRE(fp8->extra_repr().find("(4, 3)bit fake per-tensor") == 0);

  auto real =
      std::make_shared<TensorQuantizer>(desc(QuantDescriptorOptions().fake_quant(false).amax(1.5)));
  auto [q, s] = tensor_quant(x, a, 8, false, false);
  require_bitwise(real->forward(x), q, "real quantization gives the integers");
  require_bitwise(real->scale(), s, "scale of the real quantization");
  REQUIRE(real->extra_repr().find("8bit per-tensor amax=1.5000") == 0);

  REQUIRE_THROWS_WITH(
      TensorQuantizer(desc(QuantDescriptorOptions().num_bits(NumBits(4, 3)).fake_quant(false))),
      Catch::Contains("TensorQuantizer") && Catch::Contains("fake_quant"));
}

TEST_CASE("quant.modules: TensorQuantizer FP8 runs pq's or modelopt's arithmetic by fp8_recipe",
          "[quant][modules][nvidia]") {
  // -0.0 and a value below 2^-24 tell them apart: pq masks them to +0, modelopt casts them.
  const Tensor x = from_vector<float>({-0.0f, -1e-30f, 0.3f, -2.0f, 5.0f}, {5});
  const Tensor amax = scalar_tensor(2.5);
  for (const bool modelopt : {false, true}) {
    INFO((modelopt ? "modelopt" : "pytorch_quantization"));
    QuantDescriptorOptions o = QuantDescriptorOptions().num_bits(NumBits(4, 3)).amax(2.5);
    if (modelopt) o.fp8_recipe("modelopt");
    auto q = std::make_shared<TensorQuantizer>(desc(o));
    const Tensor want = modelopt ? modelopt_scaled_fp8(x, amax) : scaled_e4m3(x, amax);
    require_bitwise(q->forward(x), want, "fp8");
    CHECK(std::signbit(q->forward(x).to_vector<float>()[0]) == modelopt);
  }
}

TEST_CASE("quant.modules: TensorQuantizer max calibration flow", "[quant][modules][nvidia]") {
  Generator gen(3);
  const Tensor b0 = randn({8, 4, 3, 3}, gen), b1 = randn({8, 4, 3, 3}, gen) * 3.0;
  // Per tensor.
  auto q = std::make_shared<TensorQuantizer>();
  q->disable_quant();
  q->enable_calib();
  REQUIRE(q->extra_repr() == "8bit fake per-tensor amax=dynamic calibrator=MaxCalibrator calib");
  require_bitwise(q->forward(b0), b0, "calibrating passes the input through");
  q->forward(b1);
  REQUIRE(q->load_calib_amax());
  const Tensor want = maximum(absmax(b0), absmax(b1));
  require_bitwise(q->amax(), want, "calibrated amax");
  q->disable_calib();
  q->enable_quant();
  require_bitwise(q->forward(b0), fake_tensor_quant(b0, want, 8, false, false), "quantized");
  // Clipped STE: gradient zero where |x| > amax (amax set below the data range).
  q->set_amax(0.5);
  const Tensor x = b0.clone().set_requires_grad(true);
  q->forward(x).backward(ones_like(b0));
  const std::vector<float> xv = b0.to_vector<float>(), gv = x.grad().to_vector<float>();
  for (std::size_t i = 0; i < xv.size(); ++i)
    REQUIRE(gv[i] == (std::fabs(xv[i]) <= 0.5f ? 1.f : 0.f));

  // Per channel (axis 0 of a KCRS weight): amax [K,1,1,1].
  auto w = std::make_shared<TensorQuantizer>(desc(QuantDescriptorOptions().axis(0)));
  w->start_calibration();
  w->forward(b0);
  w->forward(b1);
  w->finish_calibration(CalibrationOptions());
  REQUIRE(w->quant_enabled());
  REQUIRE_FALSE(w->calib_enabled());
  MaxCalibrator ref({0});
  ref.collect(b0);
  ref.collect(b1);
  require_bitwise(w->amax(), ref.compute_amax(), "per-channel amax");
  REQUIRE(w->amax().shape() == Shape{8, 1, 1, 1});
  require_bitwise(w->forward(b1), fake_tensor_quant(b1, ref.compute_amax(), 8, false, false),
                  "per-channel quantized");
  REQUIRE(w->extra_repr().find("8bit fake axis=0 amax=[") == 0);
  REQUIRE(w->extra_repr().find("](8) calibrator=MaxCalibrator quant") != std::string::npos);
}

TEST_CASE("quant.modules: TensorQuantizer histogram calibration (entropy, mse, percentile)",
          "[quant][modules][nvidia]") {
  Generator gen(4);
  const Tensor b0 = randn({64, 32}, gen), b1 = randn({64, 32}, gen) * 1.5;
  for (const std::string method : {"entropy", "mse", "percentile"}) {
    INFO(method);
    auto q =
        std::make_shared<TensorQuantizer>(desc(QuantDescriptorOptions().calib_method("histogram")));
    REQUIRE(q->extra_repr().find("calibrator=HistogramCalibrator") != std::string::npos);
    q->start_calibration();
    q->forward(b0);
    q->forward(b1);
    CalibrationOptions opts;
    opts.method = method;
    opts.histogram.percentile = 99.9;
    q->finish_calibration(opts);
    HistogramCalibrator ref;
    ref.collect(b0);
    ref.collect(b1);
    HistogramAmaxOptions ho;
    ho.percentile = 99.9;
    require_bitwise(q->amax(), ref.compute_amax(method, ho), "amax");
    REQUIRE(q->amax().item<double>() < maximum(absmax(b0), absmax(b1)).item<double>());
    require_bitwise(q->forward(b0), fake_tensor_quant(b0, q->amax(), 8, false, false), "output");
  }
  auto q =
      std::make_shared<TensorQuantizer>(desc(QuantDescriptorOptions().calib_method("histogram")));
  q->enable_calib();
  q->forward(b0);
  REQUIRE_THROWS_WITH(q->load_calib_amax("max"),
                      Catch::Contains("load_calib_amax") && Catch::Contains("histogram"));
  auto m = std::make_shared<TensorQuantizer>();
  m->enable_calib();
  m->forward(b0);
  REQUIRE_THROWS_WITH(m->load_calib_amax("entropy"), Catch::Contains("max calibrator"));
}

TEST_CASE("quant.modules: TensorQuantizer load_calib_amax without data",
          "[quant][modules][nvidia]") {
  auto q = std::make_shared<TensorQuantizer>();
  REQUIRE_THROWS_AS(q->load_calib_amax(), ValueError);
  REQUIRE_THROWS_WITH(q->load_calib_amax(), Catch::Contains("TensorQuantizer::load_calib_amax") &&
                                                Catch::Contains("no data"));
  REQUIRE_FALSE(q->load_calib_amax("max", HistogramAmaxOptions(), /*strict=*/false));
  REQUIRE_FALSE(q->has_amax());
  auto h =
      std::make_shared<TensorQuantizer>(desc(QuantDescriptorOptions().calib_method("histogram")));
  REQUIRE_THROWS_WITH(h->load_calib_amax("entropy"), Catch::Contains("no data"));
  h->start_calibration();
  REQUIRE_THROWS_WITH(h->finish_calibration(CalibrationOptions()), Catch::Contains("no data"));
  // A dynamic quantizer has nothing to load and calibration leaves it alone.
  auto d = std::make_shared<TensorQuantizer>(desc(QuantDescriptorOptions().dynamic(true)));
  REQUIRE_THROWS_WITH(d->load_calib_amax(), Catch::Contains("dynamic"));
  d->start_calibration();
  REQUIRE(d->quant_enabled());
  d->finish_calibration(CalibrationOptions());
}

TEST_CASE("quant.modules: TensorQuantizer learn_amax clip and gradients",
          "[quant][modules][nvidia]") {
  Generator gen(5);
  auto q =
      std::make_shared<TensorQuantizer>(desc(QuantDescriptorOptions().learn_amax(true).amax(1.0)));
  REQUIRE(q->named_parameters().keys() ==
          std::vector<std::string>{"clip.clip_value_min", "clip.clip_value_max"});
  REQUIRE(q->clip()->clip_value_min().item<double>() == -1.0);
  const Tensor x0 = randn({5, 8}, gen) * 1.5;
  const Tensor x = x0.clone().set_requires_grad(true);
  Tensor y = q->forward(x);
  // out = fake_quant(clamp(x, cmin, cmax), max(-cmin, cmax))
  const Tensor cmin = scalar_tensor(-1.0).set_requires_grad(true);
  const Tensor cmax = scalar_tensor(1.0).set_requires_grad(true);
  const Tensor xr = x0.clone().set_requires_grad(true);
  Tensor clipped = learnable::learnable_clip(xr, cmin, cmax);
  Tensor yr = fake_tensor_quant(clipped, learnable::learnable_clip_amax(cmin, cmax).detach(), 8,
                                false, false);
  require_bitwise(y, yr, "forward");
  const Tensor dy = randn({5, 8}, gen);
  y.backward(dy);
  yr.backward(dy);
  require_bitwise(x.grad(), xr.grad(), "dx");
  require_close(q->clip()->clip_value_min().grad(), cmin.grad(), 1e-6, 1e-7, "dcmin");
  require_close(q->clip()->clip_value_max().grad(), cmax.grad(), 1e-6, 1e-7, "dcmax");
  // The PACT gradients by hand: dcmin = sum(dy where x <= -1), dcmax = sum(dy where x >= 1).
  double lo = 0, hi = 0;
  const std::vector<float> xv = x0.to_vector<float>(), dv = dy.to_vector<float>();
  for (std::size_t i = 0; i < xv.size(); ++i) {
    if (xv[i] <= -1.f) lo += dv[i];
    if (xv[i] >= 1.f) hi += dv[i];
  }
  REQUIRE(q->clip()->clip_value_min().grad().item<double>() == Approx(lo).margin(1e-5));
  REQUIRE(q->clip()->clip_value_max().grad().item<double>() == Approx(hi).margin(1e-5));

  // amax follows max(-cmin, cmax) after the bounds move.
  {
    NoGradGuard no_grad;
    Tensor(q->clip()->clip_value_max()).fill_(2.0);
  }
  REQUIRE(q->amax().item<double>() == 2.0);
  q->forward(x0);
  REQUIRE(q->state_dict().at("_amax").item<double>() == 2.0);
  REQUIRE(q->extra_repr() ==
          "8bit fake per-tensor amax=2.0000 learned calibrator=MaxCalibrator quant clip");

  // Calibration then load_calib_amax re-initialises the clip to -amax / +amax.
  q->start_calibration();
  require_bitwise(q->forward(x0), x0, "calibration passes x through (no clip)");
  q->finish_calibration(CalibrationOptions());
  REQUIRE(q->clip()->clip_value_max().item<float>() == absmax(x0).item<float>());
  REQUIRE(q->clip()->clip_value_min().item<float>() == -absmax(x0).item<float>());
  // Without the descriptor's amax, the clip starts at +-1 as pytorch_quantization.
  auto d = std::make_shared<TensorQuantizer>(desc(QuantDescriptorOptions().learn_amax(true)));
  REQUIRE(d->amax().item<double>() == 1.0);
  // learn_amax is per tensor only; a learned amax cannot be reset.
  REQUIRE_THROWS_WITH(TensorQuantizer(desc(QuantDescriptorOptions().learn_amax(true).axis(0))),
                      Catch::Contains("learn_amax"));
  REQUIRE_THROWS_AS(TensorQuantizer(desc(QuantDescriptorOptions().learn_amax(true).axis(0))),
                    ValueError);
  REQUIRE_THROWS_WITH(d->reset_amax(), Catch::Contains("learn_amax"));
  // Quantization off: the clip stage alone (pytorch_quantization's clip without quant).
  d->disable_quant();
  require_bitwise(d->forward(x0), clamp(x0, -1.0, 1.0), "clip only");
}

TEST_CASE("quant.modules: TensorQuantizer switches, amax setter and errors",
          "[quant][modules][nvidia]") {
  Generator gen(6);
  const Tensor x = randn({3, 4}, gen);
  auto q = std::make_shared<TensorQuantizer>();
  q->disable();
  REQUIRE(q->forward(x).is_same(x));
  REQUIRE(q->repr() == "TensorQuantizer(disabled)");
  q->enable();
  q->disable_quant();
  REQUIRE(q->forward(x).is_same(x));
  q->enable_quant();
  q->set_amax(2.0);
  require_bitwise(q->forward(x), fake_tensor_quant(x, scalar_tensor(2.0), 8, false, false), "set");
  q->reset_amax();
  REQUIRE_FALSE(q->has_amax());
  REQUIRE_FALSE(q->amax().defined());
  REQUIRE(q->state_dict().at("_amax").shape() == Shape{});
  REQUIRE_THROWS_WITH(q->set_amax(-1.0), Catch::Contains("set_amax") && Catch::Contains(">= 0"));
  REQUIRE_THROWS_AS(q->set_amax(std::nan("")), ValueError);
  REQUIRE_THROWS_AS(q->set_amax(tensor({1.0, 2.0})), ShapeError);
  REQUIRE_THROWS_AS(q->set_amax(zeros({2}, TensorOptions().dtype(kInt64))), DTypeError);
  // Per channel with a known shape rejects another one.
  auto w = std::make_shared<TensorQuantizer>(desc(QuantDescriptorOptions().axis(0)),
                                             TensorQuantizerOptions().amax_shape({3, 1}));
  REQUIRE(w->state_dict().at("_amax").shape() == Shape{3, 1});
  REQUIRE_FALSE(w->has_amax());
  w->set_amax(tensor({1.0, 2.0, 3.0}));  // reshaped to [3, 1]
  REQUIRE(w->amax().shape() == Shape{3, 1});
  REQUIRE_THROWS_WITH(w->set_amax(tensor({1.0, 2.0})), Catch::Contains("amax shape"));
  REQUIRE_THROWS_WITH(
      TensorQuantizer(desc(QuantDescriptorOptions().axis(0).amax(AmaxValue{{2}, {1.0, 2.0}})),
                      TensorQuantizerOptions().amax_shape({3, 1})),
      Catch::Contains("amax_shape"));
  REQUIRE_THROWS_WITH(
      TensorQuantizer(
          desc(QuantDescriptorOptions().num_bits(NumBits(4, 3)).calib_method("histogram"))),
      Catch::Contains("histogram"));
}

TEST_CASE("quant.modules: TensorQuantizer block quantization (dynamic and static)",
          "[quant][modules][nvidia]") {
  Generator gen(7);
  const Tensor x = randn({4, 10}, gen);
  BlockSizes dyn;
  dyn.axes = {{-1, 4}};
  dyn.type = BlockQuantType::Dynamic;
  auto d = std::make_shared<TensorQuantizer>(
      desc(QuantDescriptorOptions().num_bits(4).block_sizes(dyn)));
  const BlockQuantSpec dspec{4, dyn, false, false};
  require_bitwise(d->forward(x), block_fake_quant(x, dspec), "dynamic blocks");
  REQUIRE(d->extra_repr().find("4bit fake block_sizes={") == 0);

  BlockSizes st = dyn;
  st.type = BlockQuantType::Static;
  auto s =
      std::make_shared<TensorQuantizer>(desc(QuantDescriptorOptions().num_bits(4).block_sizes(st)));
  REQUIRE(s->state_dict().at("_amax").shape() == Shape{0});  // grid not known yet
  s->start_calibration();
  s->forward(x);
  s->finish_calibration(CalibrationOptions());
  REQUIRE(s->amax().shape() == Shape{4, 3});
  const BlockQuantSpec sspec{4, st, false, false};
  require_bitwise(s->amax(), block_amax(x, st), "static grid");
  const Tensor x2 = randn({4, 10}, gen);
  require_bitwise(s->forward(x2), block_fake_quant(x2, sspec, block_amax(x, st)), "static blocks");
  // The calibrated grid survives a checkpoint into a fresh quantizer (lazily sized buffer).
  auto fresh =
      std::make_shared<TensorQuantizer>(desc(QuantDescriptorOptions().num_bits(4).block_sizes(st)));
  checkpoint_round_trip(*s, *fresh);
  require_bitwise(fresh->forward(x2), s->forward(x2), "after load");
}

TEST_CASE("quant.modules: TensorQuantizer state dict and checkpoint round trip",
          "[quant][modules][nvidia]") {
  Generator gen(8);
  const Tensor w = randn({6, 3, 3, 3}, gen);
  auto q = std::make_shared<TensorQuantizer>(desc(QuantDescriptorOptions().axis(0)));
  REQUIRE(q->state_dict().keys() ==
          std::vector<std::string>{"_amax", "_disabled", "_if_quant", "_if_calib"});
  REQUIRE(q->state_dict().at("_amax").shape() == Shape{0});
  q->start_calibration();
  q->forward(w);
  q->finish_calibration(CalibrationOptions());
  REQUIRE(q->state_dict().at("_amax").shape() == Shape{6, 1, 1, 1});
  // Plain load_state_dict into a fresh quantizer fails (empty amax), load_quant_state_dict works.
  auto fresh = std::make_shared<TensorQuantizer>(desc(QuantDescriptorOptions().axis(0)));
  REQUIRE_THROWS_WITH(fresh->load_state_dict(q->state_dict()), Catch::Contains("_amax"));
  checkpoint_round_trip(*q, *fresh);
  require_bitwise(fresh->forward(w), q->forward(w), "output after load");
  // Switches travel with the state.
  q->disable();
  auto other = std::make_shared<TensorQuantizer>(desc(QuantDescriptorOptions().axis(0)),
                                                 TensorQuantizerOptions().amax_shape({6, 1, 1, 1}));
  REQUIRE(other->load_state_dict(q->state_dict()).missing_keys.empty());
  REQUIRE_FALSE(other->is_enabled());
  // Learned clip bounds round trip.
  auto l =
      std::make_shared<TensorQuantizer>(desc(QuantDescriptorOptions().learn_amax(true).amax(3.0)));
  l->set_amax(2.5);
  auto l2 = std::make_shared<TensorQuantizer>(desc(QuantDescriptorOptions().learn_amax(true)));
  checkpoint_round_trip(*l, *l2);
  REQUIRE(l2->amax().item<double>() == 2.5);
  // A model moved to float64 quantizes float64 inputs with the same amax.
  q->enable();
  q->to(kFloat64);
  const Tensor wd = w.to(kFloat64);
  require_bitwise(q->forward(wd), fake_tensor_quant(wd, q->amax().to(kFloat64), 8, false, false),
                  "float64");
}
