// Tests of the torch.ao quantizer modules (quant/modules/fake_quantize.h,
// learnable_fake_quantize.h, observer_module.h): multi-step golden runs against PyTorch 1.13's
// FakeQuantize and _LearnableFakeQuantize (outputs, input gradients, observer statistics,
// qparams, scale / zero-point gradients and SGD updates), state dicts and checkpoint round trips,
// LSQ / min-max initialisation, calibration, factories, printouts and bad arguments.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"
#include "quant/learnable/lsq.h"
#include "quant/modules/fake_quantize.h"
#include "quant/modules/learnable_fake_quantize.h"
#include "quant/torch_ao/fake_quantize.h"
#include "quant/torch_ao/learnable_fake_quantize.h"
#include "test_modules_helpers.h"

using namespace qgrad;
using namespace qgrad::quant;
using namespace qgrad_qm_test;

namespace {

ObserverConfig obs(ObserverKind kind, ao::QuantDType dtype, ao::QScheme qscheme, std::int64_t qmin,
                   std::int64_t qmax, std::int64_t ch_axis = 0) {
  ObserverConfig c;
  c.kind = kind;
  c.options = ao::ObserverOptions().dtype(dtype).qscheme(qscheme).quant_range(qmin, qmax);
  c.ch_axis = ch_axis;
  return c;
}

FakeQuantizeConfig fq_config(int i) {
  using K = ObserverKind;
  using D = ao::QuantDType;
  using S = ao::QScheme;
  switch (i) {
    case 0:
      return FakeQuantizeConfig();
    case 1:
      return {obs(K::MovingAveragePerChannelMinMax, D::QInt8, S::PerChannelSymmetric, -128, 127, 1),
              std::nullopt};
    case 2:
      return {obs(K::MinMax, D::QInt8, S::PerTensorSymmetric, -128, 127), std::nullopt};
    case 3:
      return default_fake_quant_config();
    default:
      return {obs(K::PerChannelMinMax, D::QUInt8, S::PerChannelAffine, 0, 255, 0), std::nullopt};
  }
}

struct LfqCase {
  LearnableFakeQuantizeConfig config;
  int learn_from;
};

LfqCase lfq_case(int i) {
  using K = ObserverKind;
  using D = ao::QuantDType;
  using S = ao::QScheme;
  LearnableFakeQuantizeConfig c;
  switch (i) {
    case 0:
      c.observer = obs(K::MovingAverageMinMax, D::QUInt8, S::PerTensorAffine, 0, 255);
      c.use_grad_scaling = true;
      return {c, 2};
    case 1:
      c.observer =
          obs(K::MovingAveragePerChannelMinMax, D::QInt8, S::PerChannelSymmetric, -128, 127, 1);
      c.channel_len = 3;
      return {c, 2};
    case 2:
      c.observer = obs(K::MovingAverageMinMax, D::QInt8, S::PerTensorSymmetric, -128, 127);
      c.scale = 0.05;
      c.use_grad_scaling = true;
      return {c, 0};
    default:
      c.observer = obs(K::MovingAveragePerChannelMinMax, D::QUInt8, S::PerChannelAffine, 0, 255, 0);
      c.channel_len = 4;
      return {c, 3};
  }
}

// p = p - lr * grad (two roundings, as the fixture script), gradient cleared.
void sgd_step(const Tensor& p, double lr) {
  NoGradGuard no_grad;
  Tensor dst = p;
  const Tensor updated = sub(p.detach(), mul(p.grad(), lr));
  dst.copy_(updated);
  p.set_grad(Tensor());
}

}  // namespace

TEST_CASE("quant.modules: FakeQuantize matches torch.ao FakeQuantize over several steps",
          "[quant][modules]") {
  for (int i = 0; i < 5; ++i) {
    INFO("config " << i);
    auto fq = std::make_shared<FakeQuantize>(fq_config(i));
    const Tensor X = load_fixture("fq" + std::to_string(i) + "_x");
    const Tensor DY = load_fixture("fq" + std::to_string(i) + "_dy");
    auto want = [&](const std::string& what, int k) {
      return load_fixture("fq" + std::to_string(i) + "_" + what).select(0, k);
    };
    for (int k = 0; k < 6; ++k) {
      INFO("step " << k);
      if (k == 3) fq->disable_observer();
      if (k == 4) {
        fq->enable_observer();
        fq->disable_fake_quant();
      }
      if (k == 5) fq->enable_fake_quant();
      Tensor x = X.select(0, k).clone().set_requires_grad(true);
      Tensor y = fq->forward(x);
      y.backward(DY.select(0, k).clone());
      require_bitwise(y, want("y", k), "y");
      require_bitwise(x.grad(), want("dx", k), "dx");
      require_bitwise(fq->scale(), want("scale", k), "scale");
      REQUIRE(fq->zero_point().to_vector<std::int64_t>() ==
              want("zp", k).to_vector<std::int64_t>());
      require_bitwise(fq->activation_post_process()->min_val(), want("minv", k), "min_val");
      require_bitwise(fq->activation_post_process()->max_val(), want("maxv", k), "max_val");
    }
  }
}

TEST_CASE(
    "quant.modules: LearnableFakeQuantize matches torch.ao _LearnableFakeQuantize while "
    "training",
    "[quant][modules]") {
  const double lr = 0.001;
  for (int i = 0; i < 4; ++i) {
    INFO("config " << i);
    const LfqCase c = lfq_case(i);
    auto fq = std::make_shared<LearnableFakeQuantize>(c.config);
    const std::string p = "lfq" + std::to_string(i) + "_";
    const Tensor X = load_fixture(p + "x"), DY = load_fixture(p + "dy");
    auto want = [&](const std::string& what, int k) { return load_fixture(p + what).select(0, k); };
    for (int k = 0; k < 6; ++k) {
      INFO("step " << k);
      if (k == c.learn_from) fq->enable_param_learning();
      Tensor x = X.select(0, k).clone().set_requires_grad(true);
      Tensor y = fq->forward(x);
      y.backward(DY.select(0, k).clone());
      if (k <= c.learn_from) {
        require_bitwise(y, want("y", k), "y");
      } else {
        // After an SGD step the parameters agree to rounding only (gradient sums run in another
        // order); a different integer level would be off by >= 1/127 relative.
        require_close(y, want("y", k), 1e-5, 1e-7, "y");
      }
      require_bitwise(x.grad(), want("dx", k), "dx");
      // Each gradient term is sensitive to the scale by ~|x/s|, so after an update (scale equal to
      // rounding) the sums agree to ~1e-5 absolute.
      const double atol = k <= c.learn_from ? 1e-6 : 5e-5;
      require_close(fq->scale().grad(), want("dscale", k), 2e-5, atol, "dscale");
      require_close(fq->zero_point().grad(), want("dzp", k), 2e-5, atol, "dzero_point");
      if (k >= c.learn_from) {
        sgd_step(fq->scale(), lr);
        sgd_step(fq->zero_point(), lr);
      } else {
        Tensor(fq->scale()).set_grad(Tensor());
        Tensor(fq->zero_point()).set_grad(Tensor());
      }
      require_close(fq->scale(), want("scale", k), 1e-6, 1e-9, "scale");
      require_close(fq->zero_point(), want("zp", k), 1e-6, 1e-9, "zero_point");
    }
  }
}

TEST_CASE(
    "quant.modules: FakeQuantize state dict, checkpoint round trip and lazy per-channel "
    "buffers",
    "[quant][modules]") {
  Generator gen(5);
  auto fq = std::make_shared<FakeQuantize>(default_per_channel_weight_fake_quant_config());
  REQUIRE(fq->state_dict().keys() ==
          std::vector<std::string>{"fake_quant_enabled", "observer_enabled", "scale", "zero_point",
                                   "activation_post_process.eps", "activation_post_process.min_val",
                                   "activation_post_process.max_val"});
  REQUIRE(fq->scale().shape() == Shape{0});  // sized by the first batch
  const Tensor w = randn({6, 2, 3, 3}, gen);
  const Tensor y = fq->forward(w);
  REQUIRE(fq->scale().shape() == Shape{6});
  REQUIRE(fq->zero_point().shape() == Shape{6});
  REQUIRE(fq->state_dict().at("activation_post_process.min_val").shape() == Shape{6});
  // The registered buffers are the tensors the module computes with.
  REQUIRE(fq->named_buffers().at("scale").is_same(fq->scale()));
  require_bitwise(fq->scale(), fq->calculate_qparams().scale, "scale vs observer qparams");
  fq->disable_observer();

  // A fresh module (empty per-channel buffers) loads the checkpoint; outputs then agree.
  auto fresh = std::make_shared<FakeQuantize>(default_per_channel_weight_fake_quant_config());
  checkpoint_round_trip(*fq, *fresh);
  REQUIRE_FALSE(fresh->observer_enabled());
  require_bitwise(fresh->forward(w), fq->forward(w), "output after load");
  // The observer statistics were restored too: observing continues from them.
  fresh->enable_observer();
  fq->enable_observer();
  const Tensor w2 = randn({6, 2, 3, 3}, gen);
  fresh->forward(w2);
  fq->forward(w2);
  require_same_state(fresh->state_dict(), fq->state_dict());

  // Per-channel buffers sized up front with channel_len load without a forward.
  FakeQuantizeConfig sized = default_per_channel_weight_fake_quant_config();
  sized.channel_len = 6;
  auto pre = std::make_shared<FakeQuantize>(sized);
  REQUIRE(pre->scale().shape() == Shape{6});
  // The observer's per-channel statistics stay lazily sized ([0] means "nothing observed"), so
  // a plain load_state_dict names them; load_quant_state_dict sizes them first.
  REQUIRE_THROWS_WITH(pre->load_state_dict(fq->state_dict()),
                      Catch::Contains("activation_post_process.min_val"));
  REQUIRE(load_quant_state_dict(*pre, fq->state_dict()).missing_keys.empty());
  require_bitwise(pre->scale(), fq->scale(), "scale");

  // A failed load leaves the lazily sized buffers as they were.
  auto fresh2 = std::make_shared<FakeQuantize>(default_per_channel_weight_fake_quant_config());
  TensorDict bad = fq->state_dict();
  bad.insert("bogus", zeros({1}));
  REQUIRE_THROWS_AS(load_quant_state_dict(*fresh2, bad), ValueError);
  REQUIRE(fresh2->scale().shape() == Shape{0});
}

TEST_CASE(
    "quant.modules: FakeQuantize per tensor equals the functional op, switches and "
    "calibration",
    "[quant][modules]") {
  Generator gen(7);
  auto fq = std::make_shared<FakeQuantize>(default_weight_fake_quant_config());
  const Tensor x = randn({3, 7}, gen) * 2.0;
  const Tensor y = fq->forward(x);
  const ao::QParams qp = fq->calculate_qparams();
  require_bitwise(y, ao::fake_quantize_per_tensor_affine(x, qp.scale, qp.zero_point, -128, 127),
                  "forward vs functional");
  // A transposed (non-contiguous) input gives the same values as its contiguous copy.
  fq->disable_observer();
  const Tensor xt = randn({7, 3}, gen).transpose(0, 1);
  require_bitwise(fq->forward(xt), fq->forward(xt.contiguous()), "non-contiguous input");

  // Calibration: observe only (input unchanged), then fake quantization is back on.
  auto cal = std::make_shared<FakeQuantize>(default_fake_quant_config());
  cal->start_calibration();
  require_bitwise(cal->forward(x), x, "calibration passes the input through");
  cal->finish_calibration(CalibrationOptions());
  REQUIRE(cal->fake_quant_enabled());
  REQUIRE(cal->observer_enabled());
  REQUIRE(cal->scale().item<double>() != 1.0);

  auto idle = std::make_shared<FakeQuantize>();
  idle->start_calibration();
  REQUIRE_THROWS_WITH(idle->finish_calibration(CalibrationOptions()),
                      Catch::Contains("FakeQuantize") && Catch::Contains("no data"));
  CalibrationOptions lax;
  lax.strict = false;
  idle->finish_calibration(lax);
  REQUIRE(idle->fake_quant_enabled());
}

TEST_CASE("quant.modules: FakeQuantize with qint32 and histogram observers", "[quant][modules]") {
  Generator gen(19);
  const Tensor x = randn({6, 5}, gen) * 4.0;
  // qint32, per tensor symmetric, the dtype's own range (PyTorch caps user ranges at 2^31 values).
  FakeQuantizeConfig c32;
  c32.observer.kind = ObserverKind::MinMax;
  c32.observer.options.dtype(ao::QuantDType::QInt32).qscheme(ao::QScheme::PerTensorSymmetric);
  auto q32 = std::make_shared<FakeQuantize>(c32);
  REQUIRE(q32->quant_min() == -2147483648LL);
  const Tensor y32 = q32->forward(x);
  const ao::QParams p32 = q32->calculate_qparams();
  require_bitwise(y32,
                  ao::fake_quantize_per_tensor_affine(x, p32.scale, p32.zero_point,
                                                      q32->quant_min(), q32->quant_max()),
                  "qint32");
  require_close(y32, x, 1e-6, 1e-8, "qint32 is nearly lossless");
  // Histogram observer (per tensor): qparams from PyTorch's non-linear search.
  FakeQuantizeConfig ch;
  ch.observer.kind = ObserverKind::Histogram;
  ch.observer.bins = 64;
  auto qh = std::make_shared<FakeQuantize>(ch);
  const Tensor xi =
      randint(-20, 21, {40}, gen).to(kFloat32);  // integer range ends (see HistogramObserver)
  const Tensor yh = qh->forward(xi);
  const ao::QParams ph = qh->calculate_qparams();
  require_bitwise(qh->scale(), ph.scale, "histogram scale");
  require_bitwise(yh, ao::fake_quantize_per_tensor_affine(xi, ph.scale, ph.zero_point, 0, 255),
                  "histogram output");
  REQUIRE(qh->state_dict().contains("activation_post_process.histogram"));
}

TEST_CASE("quant.modules: FakeQuantize with_args, printout and bad configurations",
          "[quant][modules]") {
  const FakeQuantize::Factory make = FakeQuantize::with_args(default_weight_fake_quant_config());
  auto a = make(), b = make();
  REQUIRE(a.get() != b.get());
  REQUIRE(a->quant_min() == -128);
  REQUIRE(b->quant_max() == 127);
  REQUIRE(a->repr() ==
          "FakeQuantize(\n  fake_quant_enabled=1, observer_enabled=1, quant_min=-128, "
          "quant_max=127, dtype=qint8, qscheme=per_tensor_symmetric, ch_axis=-1, scale=1.0, "
          "zero_point=0\n  (activation_post_process): MovingAverageMinMaxObserver(min_val=inf, "
          "max_val=-inf)\n)");
  // default_fake_quant halves the range (reduce_range).
  REQUIRE(FakeQuantize(default_fake_quant_config()).quant_max() == 127);

  FakeQuantizeConfig bad = default_weight_fake_quant_config();
  bad.channel_len = 4;
  REQUIRE_THROWS_WITH(FakeQuantize(bad),
                      Catch::Contains("FakeQuantize") && Catch::Contains("channel_len"));
  FakeQuantizeConfig mismatch = default_weight_fake_quant_config();
  mismatch.observer.options.qscheme(ao::QScheme::PerChannelSymmetric);
  REQUIRE_THROWS_AS(FakeQuantize(mismatch), ValueError);
  FakeQuantizeConfig floatq = default_per_channel_weight_fake_quant_config();
  floatq.observer.options.qscheme(ao::QScheme::PerChannelAffineFloatQParams);
  REQUIRE_THROWS_WITH(FakeQuantize(floatq), Catch::Contains("float"));
  // A per-channel quantizer sized for 4 channels rejects a 5-channel batch.
  FakeQuantizeConfig four = default_per_channel_weight_fake_quant_config();
  four.channel_len = 4;
  auto fq4 = std::make_shared<FakeQuantize>(four);
  Generator gen(1);
  fq4->forward(randn({4, 3}, gen));
  REQUIRE_THROWS_AS(fq4->forward(randn({5, 3}, gen)), ShapeError);
}

TEST_CASE("quant.modules: LearnableFakeQuantize LSQ and min/max initialisation, gradients",
          "[quant][modules]") {
  Generator gen(11);
  // LSQ: symmetric signed 4-bit, s = 2 mean|x| / sqrt(7) on the first batch.
  LearnableFakeQuantizeConfig c;
  c.observer = obs(ObserverKind::MovingAverageMinMax, ao::QuantDType::QInt8,
                   ao::QScheme::PerTensorSymmetric, -8, 7);
  c.init = LearnableInit::LSQ;
  c.use_grad_scaling = true;
  auto lsq = std::make_shared<LearnableFakeQuantize>(c);
  REQUIRE(lsq->learning_enabled());
  REQUIRE_FALSE(lsq->static_enabled());
  const Tensor x = randn({5, 6}, gen).set_requires_grad(true);
  Tensor y = lsq->forward(x);
  REQUIRE(lsq->is_initialized());
  const float s0 = static_cast<float>(2.0 * mean(abs(x.detach())).item<double>() / std::sqrt(7.0));
  REQUIRE(lsq->scale().item<float>() == Approx(s0).epsilon(1e-6));
  // Forward and gradients equal the paper's LSQ with the same step (Q_N = 8, Q_P = 7).
  const Tensor s = lsq->scale().detach().reshape({}).clone().set_requires_grad(true);
  const Tensor xr = x.detach().clone().set_requires_grad(true);
  Tensor yr = learnable::lsq_quantize(xr, s, 8, 7, learnable::lsq_grad_scale(30, 7));
  require_close(y, yr, 0, 0, "LSQ forward");  // equal values (+0 vs -0 may differ)
  const Tensor dy = randn({5, 6}, gen);
  y.backward(dy);
  yr.backward(dy);
  require_bitwise(x.grad(), xr.grad(), "dx");
  require_close(lsq->scale().grad().reshape({}), s.grad(), 1e-5, 1e-7, "dscale");
  // A second batch does not re-initialise.
  const Tensor before = lsq->scale().detach().clone();
  lsq->forward(randn({5, 6}, gen) * 10.0);
  require_bitwise(lsq->scale(), before, "scale kept");

  // Min/max (LSQ+) per channel, affine unsigned: s = (max0 - min0) / 255, zp = -min0 / s.
  LearnableFakeQuantizeConfig m;
  m.observer = obs(ObserverKind::MovingAveragePerChannelMinMax, ao::QuantDType::QUInt8,
                   ao::QScheme::PerChannelAffine, 0, 255, 1);
  m.channel_len = 3;
  m.init = LearnableInit::MinMax;
  auto mm = std::make_shared<LearnableFakeQuantize>(m);
  const Tensor a = randn({4, 3}, gen);
  mm->forward(a);
  const std::vector<float> sv = mm->scale().to_vector<float>(),
                           zv = mm->zero_point().to_vector<float>();
  for (std::int64_t ch = 0; ch < 3; ++ch) {
    const Tensor col = a.select(1, ch);
    const double lo = std::min(amin(col).item<double>(), 0.0);
    const double hi = std::max(amax(col).item<double>(), 0.0);
    const double sc = (hi - lo) / 255.0;
    REQUIRE(sv[static_cast<std::size_t>(ch)] == Approx(sc).epsilon(1e-6));
    REQUIRE(zv[static_cast<std::size_t>(ch)] == Approx(-lo / sc).epsilon(1e-5));
  }
  // Output equals the torch.ao learnable op with these parameters.
  require_bitwise(mm->forward(a),
                  ao::fake_quantize_learnable_per_channel_affine(
                      a, mm->scale().detach(), mm->zero_point().detach(), 1, 0, 255),
                  "per-channel forward");
}

TEST_CASE("quant.modules: LearnableFakeQuantize state, calibration, checkpoint and errors",
          "[quant][modules]") {
  Generator gen(13);
  LearnableFakeQuantizeConfig c;
  auto fq = std::make_shared<LearnableFakeQuantize>(c);
  REQUIRE(fq->state_dict().keys() ==
          std::vector<std::string>{"scale", "zero_point", "fake_quant_enabled", "static_enabled",
                                   "learning_enabled", "eps", "initialized",
                                   "activation_post_process.eps", "activation_post_process.min_val",
                                   "activation_post_process.max_val"});
  REQUIRE(fq->named_parameters().keys() == std::vector<std::string>{"scale", "zero_point"});
  // Calibration: observation only, then qparams from the observer and learning on.
  fq->start_calibration();
  const Tensor x = randn({8}, gen) * 3.0;
  require_bitwise(fq->forward(x), x, "static observation passes x through");
  fq->finish_calibration(CalibrationOptions());
  REQUIRE(fq->learning_enabled());
  REQUIRE(fq->is_initialized());
  const ao::QParams qp = fq->activation_post_process()->calculate_qparams();
  require_bitwise(fq->scale(), qp.scale, "scale from observer");
  REQUIRE(fq->calculate_qparams().zero_point.to_vector<std::int64_t>() ==
          qp.zero_point.to_vector<std::int64_t>());
  // Learn a step, then round trip through a checkpoint into a fresh module.
  fq->forward(x).backward(ones({8}));
  sgd_step(fq->scale(), 1e-3);
  sgd_step(fq->zero_point(), 1e-3);
  auto fresh = std::make_shared<LearnableFakeQuantize>(c);
  checkpoint_round_trip(*fq, *fresh);
  REQUIRE(fresh->learning_enabled());
  require_bitwise(fresh->forward(x), fq->forward(x), "output after load");

  // Errors.
  LearnableFakeQuantizeConfig bad = c;
  bad.channel_len = 3;
  REQUIRE_THROWS_WITH(LearnableFakeQuantize(bad),
                      Catch::Contains("LearnableFakeQuantize") && Catch::Contains("channel_len"));
  bad = c;
  bad.scale = 0;
  REQUIRE_THROWS_WITH(LearnableFakeQuantize(bad), Catch::Contains("scale"));
  bad = c;
  bad.observer.options.quant_range(3, 3);
  REQUIRE_THROWS_AS(LearnableFakeQuantize(bad), ValueError);
  LearnableFakeQuantizeConfig lsq = c;
  lsq.init = LearnableInit::LSQ;
  auto empty_batch = std::make_shared<LearnableFakeQuantize>(lsq);
  REQUIRE_THROWS_WITH(empty_batch->forward(zeros({0})), Catch::Contains("empty"));
  auto idle = std::make_shared<LearnableFakeQuantize>(c);
  idle->start_calibration();
  REQUIRE_THROWS_WITH(idle->finish_calibration(CalibrationOptions()), Catch::Contains("no data"));
  REQUIRE(fq->repr().find("LearnableFakeQuantize(\n  fake_quant_enabled=1, static_enabled=0, "
                          "learning_enabled=1, quant_min=0, quant_max=255") == 0);
}

TEST_CASE("quant.modules: Observer module registers the statistics of every observer kind",
          "[quant][modules]") {
  Generator gen(17);
  const Tensor x = randn({4, 3}, gen);
  for (ObserverKind k :
       {ObserverKind::MinMax, ObserverKind::MovingAverageMinMax, ObserverKind::PerChannelMinMax,
        ObserverKind::MovingAveragePerChannelMinMax, ObserverKind::Histogram}) {
    INFO(observer_kind_name(k));
    ObserverConfig c;
    c.kind = k;
    c.ch_axis = 1;
    if (is_per_channel(k)) c.options.qscheme(ao::QScheme::PerChannelAffine);
    if (k == ObserverKind::Histogram) c.bins = 16;
    auto o = std::make_shared<Observer>(c);
    REQUIRE(o->name() == observer_kind_name(k));
    require_bitwise(o->forward(x), x, "observer returns its input");
    o->forward(x * 2.0);
    const TensorDict sd = o->state_dict();
    REQUIRE(sd.contains("eps"));
    REQUIRE(sd.contains("min_val"));
    REQUIRE(sd.contains("max_val"));
    REQUIRE(sd.contains("histogram") == (k == ObserverKind::Histogram));
    auto fresh = std::make_shared<Observer>(c);
    checkpoint_round_trip(*o, *fresh);
    require_bitwise(fresh->calculate_qparams().scale, o->calculate_qparams().scale, "qparams");
    o->reset_min_max_vals();
    REQUIRE_FALSE(observer_has_data(*o));
  }
}

// FakeQuantize's flags as forward() reads them (quant/modules/host_flag.h): its own switches,
// a write to the buffer from outside (fill_), and a load_state_dict all take effect at the next
// forward, though the host keeps a cached copy.
TEST_CASE("FakeQuantize: the flags' cached copy follows every write to the buffers",
          "[quant][modules]") {
  quant::FakeQuantize fq;
  const Tensor x = from_vector<float>({-1.0f, 0.3f, 0.7f, 2.0f}, {4});
  fq.forward(x);
  fq.disable_fake_quant();
  CHECK(!fq.fake_quant_enabled());
  CHECK(fq.forward(x).is_same(x));
  TensorDict on = fq.state_dict();
  Tensor flag = on["fake_quant_enabled"];
  flag.fill_(1);  // written behind the module's back
  CHECK(fq.fake_quant_enabled());
  CHECK(!fq.forward(x).is_same(x));
  fq.disable_fake_quant();
  fq.disable_observer();
  TensorDict saved = fq.state_dict();
  quant::FakeQuantize other;
  other.load_state_dict(saved);  // both off, loaded
  CHECK(!other.fake_quant_enabled());
  CHECK(!other.observer_enabled());
  CHECK(other.forward(x).is_same(x));
  quant::FakeQuantize again;
  again.disable_fake_quant();
  TensorDict fresh = quant::FakeQuantize().state_dict();  // both on
  again.load_state_dict(fresh);
  CHECK(again.fake_quant_enabled());
  CHECK(again.observer_enabled());
}
