// Tests of the torch.ao observers (quant/observer): golden runs from PyTorch 1.13 over several
// batches for every observer kind, dtype (qint8/quint8/qint32), scheme (affine, symmetric, float
// qparams), reduce_range, user ranges, channel axes, one-sided and constant data, compared bit for
// bit (statistics, scales, zero points); plus the never-observed defaults and bad arguments.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "core/factory.h"
#include "core/npy.h"
#include "ops/binary/binary.h"
#include "quant/observer/aminmax_kernels.h"
#include "quant/observer/minmax_observer.h"
#include "quant/observer/observer_kernels.h"
#include "quant/observer/per_channel_minmax_observer.h"
#include "support/fixtures.h"

using namespace qgrad;
using namespace qgrad::ao;
using qgrad_test::float_bits;

namespace {

bool has_fixture(const std::string& name) {
  return qgrad_test::has_fixture("quant_ao", name);
}
Tensor load(const std::string& name) {
  return qgrad_test::load_fixture("quant_ao", name);
}

void require_row(const std::vector<double>& got, const std::vector<double>& fixture_rows,
                 std::size_t row, std::size_t width, const std::string& what) {
  for (std::size_t c = 0; c < got.size(); ++c) {
    const auto want = static_cast<float>(fixture_rows[row * width + c]);
    INFO(what << " channel " << c << ": got " << got[c] << " want " << want);
    REQUIRE(float_bits(static_cast<float>(got[c])) == float_bits(want));
  }
}

std::unique_ptr<UniformQuantizationObserver> make_observer(const std::vector<double>& h) {
  const int kind = static_cast<int>(h[0]);
  const QuantDType dtypes[] = {QuantDType::QInt8, QuantDType::QUInt8, QuantDType::QInt32};
  const QScheme schemes[] = {QScheme::PerTensorAffine, QScheme::PerTensorSymmetric,
                             QScheme::PerChannelAffine, QScheme::PerChannelSymmetric,
                             QScheme::PerChannelAffineFloatQParams};
  ObserverOptions o = ObserverOptions()
                          .dtype(dtypes[static_cast<int>(h[1])])
                          .qscheme(schemes[static_cast<int>(h[2])])
                          .reduce_range(h[3] != 0);
  // The fixture stores the resulting range; a user range is recovered from it (undoing the
  // halving of reduce_range).
  if (h[4] != 0) {
    auto qmin = static_cast<std::int64_t>(h[5]), qmax = static_cast<std::int64_t>(h[6]);
    if (h[3] != 0) {
      qmin *= 2;
      qmax = qmax * 2 + 1;
    }
    o.quant_range(qmin, qmax);
  }
  const double c = h[7];
  const auto axis = static_cast<std::int64_t>(h[8]);
  switch (kind) {
    case 0:
      return std::make_unique<MinMaxObserver>(o);
    case 1:
      return std::make_unique<MovingAverageMinMaxObserver>(c, o);
    case 2:
      return std::make_unique<PerChannelMinMaxObserver>(axis, o);
    default:
      return std::make_unique<MovingAveragePerChannelMinMaxObserver>(c, axis, o);
  }
}

Tensor stat(UniformQuantizationObserver& obs, bool max) {
  if (auto* p = dynamic_cast<MinMaxObserver*>(&obs)) return max ? p->max_val() : p->min_val();
  auto* q = dynamic_cast<PerChannelMinMaxObserver*>(&obs);
  return max ? q->max_val() : q->min_val();
}

}  // namespace

TEST_CASE("observers match PyTorch over several batches", "[quant][observer]") {
  int cases = 0;
  for (int i = 0;; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "obs_%03d", i);
    if (!has_fixture(name)) break;
    ++cases;
    const Tensor f = load(name);
    const auto width = static_cast<std::size_t>(f.size(1));
    const std::vector<double> v = f.to_vector<double>();
    const std::vector<double> header(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(width));
    INFO(name << ": kind " << header[0] << " dtype " << header[1] << " qscheme " << header[2]
              << " reduce_range " << header[3] << " custom " << header[4] << " axis " << header[8]);
    auto obs = make_observer(header);
    REQUIRE(obs->quant_min() == static_cast<std::int64_t>(header[5]));
    REQUIRE(obs->quant_max() == static_cast<std::int64_t>(header[6]));
    std::size_t row = 1;
    const std::size_t steps = (static_cast<std::size_t>(f.size(0)) - 3) / 2;
    for (std::size_t k = 0; k < steps; ++k) {
      const int batch = static_cast<int>(header[9 + k]);
      obs->forward(load("obs_batch_" + std::to_string(batch)));
      require_row(stat(*obs, false).to_vector<double>(), v, row++, width, "min_val");
      require_row(stat(*obs, true).to_vector<double>(), v, row++, width, "max_val");
    }
    const QParams qp = obs->calculate_qparams();
    require_row(qp.scale.to_vector<double>(), v, row++, width, "scale");
    const std::vector<double> zp = qp.zero_point.to_vector<double>();
    for (std::size_t c = 0; c < zp.size(); ++c) {
      INFO("zero_point channel " << c);
      REQUIRE(zp[c] == v[row * width + c]);
    }
  }
  REQUIRE(cases >= 50);
}

TEST_CASE("observers: never observed gives scale 1 and zero point 0", "[quant][observer]") {
  MinMaxObserver a;
  MovingAverageMinMaxObserver b;
  PerChannelMinMaxObserver c;
  MovingAveragePerChannelMinMaxObserver d;
  for (UniformQuantizationObserver* o :
       std::initializer_list<UniformQuantizationObserver*>{&a, &b, &c, &d}) {
    const QParams q = o->calculate_qparams();
    CHECK(q.scale.to_vector<float>() == std::vector<float>{1.0f});
    CHECK(q.zero_point.to_vector<std::int64_t>() == std::vector<std::int64_t>{0});
    o->forward(empty({0, 4}));  // empty batches are ignored
    CHECK(o->calculate_qparams().scale.to_vector<float>() == std::vector<float>{1.0f});
  }
  a.forward(from_vector<float>({-1.0f, 3.0f}, {2}));
  a.reset_min_max_vals();
  CHECK(a.calculate_qparams().scale.to_vector<float>() == std::vector<float>{1.0f});
}

TEST_CASE("observers: quint8 symmetric zero point, eps floor, float64 input", "[quant][observer]") {
  MinMaxObserver sym(ObserverOptions().qscheme(QScheme::PerTensorSymmetric));
  sym.forward(from_vector<double>({-2.0, 1.0}, {2}));
  QParams q = sym.calculate_qparams();
  CHECK(q.zero_point.to_vector<std::int64_t>() == std::vector<std::int64_t>{128});
  CHECK(q.scale.item<float>() == 2.0f / 127.5f);
  MinMaxObserver zero;
  zero.forward(zeros({3}));
  CHECK(zero.calculate_qparams().scale.item<float>() == static_cast<float>(kFloat32Eps));
}

TEST_CASE("observers: NaN statistics and bad options are errors", "[quant][observer]") {
  using Catch::Contains;
  MinMaxObserver o;
  o.forward(from_vector<float>({1.0f, std::nanf("")}, {2}));
  REQUIRE(std::isnan(o.min_val().item<float>()));
  REQUIRE_THROWS_AS(o.calculate_qparams(), ValueError);
  MinMaxObserver inf_obs;
  inf_obs.forward(from_vector<float>({1.0f, std::numeric_limits<float>::infinity()}, {2}));
  REQUIRE_THROWS_WITH(inf_obs.calculate_qparams(), Contains("finite"));

  REQUIRE_THROWS_AS(MinMaxObserver(ObserverOptions().qscheme(QScheme::PerChannelAffine)),
                    ValueError);
  REQUIRE_THROWS_AS(PerChannelMinMaxObserver(0, ObserverOptions()), ValueError);
  REQUIRE_THROWS_WITH(
      MinMaxObserver(ObserverOptions().qscheme(QScheme::PerTensorSymmetric).reduce_range(true)),
      Contains("reduce range"));
  REQUIRE_THROWS_AS(MinMaxObserver(ObserverOptions().quant_range(1, 10)), ValueError);
  REQUIRE_THROWS_AS(MinMaxObserver(ObserverOptions().quant_range(0, 0)), ValueError);
  REQUIRE_THROWS_AS(
      MinMaxObserver(ObserverOptions().dtype(QuantDType::QInt8).quant_range(-200, 100)),
      ValueError);
  REQUIRE_THROWS_AS(MovingAverageMinMaxObserver(1.5), ValueError);
  REQUIRE_THROWS_AS(MinMaxObserver(ObserverOptions().eps(0)), ValueError);

  PerChannelMinMaxObserver pc(1);
  pc.forward(ones({2, 3}));
  REQUIRE_THROWS_AS(pc.forward(ones({2, 4})), ShapeError);
  REQUIRE_THROWS_AS(pc.forward(ones({2})), IndexError);
  REQUIRE_THROWS_AS(o.forward(ones({2}, TensorOptions().dtype(kInt32))), DTypeError);
}

TEST_CASE("observers: large inputs take the parallel path with the same result",
          "[quant][observer]") {
  Generator gen(11);
  Tensor x = randn({64, 3, 1000}, gen);
  x.data_ptr<float>()[123457] = 9.5f;
  x.data_ptr<float>()[7] = -8.25f;
  MinMaxObserver o;
  o.forward(x);
  CHECK(o.min_val().item<float>() == -8.25f);
  CHECK(o.max_val().item<float>() == 9.5f);
  PerChannelMinMaxObserver pc(1);
  pc.forward(x);
  const std::vector<float> mx = pc.max_val().to_vector<float>();
  const std::vector<float> xs = x.to_vector<float>();
  for (int c = 0; c < 3; ++c) {
    float m = -1e30f;
    for (int a = 0; a < 64; ++a)
      for (int b = 0; b < 1000; ++b)
        m = std::max(m, xs[static_cast<std::size_t>((a * 3 + c) * 1000 + b)]);
    CHECK(mx[static_cast<std::size_t>(c)] == m);
  }
}

// What a GPU observer runs (the "observer.aminmax_into", "observer.running_stats" and
// "observer.qparams" kernels, observer_elem.h's functors through cpu::Map here) gives the host
// observers' bits: statistics after each batch and the qparams, for every observer and scheme,
// batches with zeros of both signs and a second batch that narrows and widens the range. The
// functors' errors: NaN or infinite statistics, and unobserved ones only per tensor.
TEST_CASE("observers: the device kernels' functors give the host observers' bits",
          "[quant][observer]") {
  const KernelTable<AminmaxIntoKernel>& into = kernel_table(kAminmaxIntoKernels);
  const KernelTable<RunningStatsKernel>& update = kernel_table(kRunningStatsKernels);
  const KernelTable<ObserverQParamsKernel>& qparams = kernel_table(kObserverQParamsKernels);
  const auto same_bits = qgrad_test::require_bitwise_f64;
  Generator gen(23);
  Tensor x1 = randn({4, 6, 5}, gen);
  {
    float* p = x1.data_ptr<float>();
    p[3] = -0.0f;  // zeros of both signs
    p[40] = 0.0f;
  }
  const Tensor x2 = randn({4, 6, 5}, gen) * 0.5 + 0.75;
  const ObserverOptions symmetric =
      ObserverOptions().dtype(QuantDType::QInt8).qscheme(QScheme::PerTensorSymmetric);
  const ObserverOptions ch_symmetric =
      ObserverOptions().dtype(QuantDType::QInt8).qscheme(QScheme::PerChannelSymmetric);
  const ObserverOptions ch_float = ObserverOptions().qscheme(QScheme::PerChannelAffineFloatQParams);
  struct Case {
    std::shared_ptr<UniformQuantizationObserver> obs;
    std::int64_t axis;  // -1 per tensor
    float averaging;    // < 0: MinMaxObserver
  };
  const std::vector<Case> cases = {
      {std::make_shared<MinMaxObserver>(), -1, -1.0f},
      {std::make_shared<MinMaxObserver>(symmetric), -1, -1.0f},
      {std::make_shared<MovingAverageMinMaxObserver>(0.25), -1, 0.25f},
      {std::make_shared<PerChannelMinMaxObserver>(1), 1, -1.0f},
      {std::make_shared<PerChannelMinMaxObserver>(0, ch_symmetric), 0, -1.0f},
      {std::make_shared<PerChannelMinMaxObserver>(2, ch_float), 2, -1.0f},
      {std::make_shared<MovingAveragePerChannelMinMaxObserver>(0.1, 1), 1, 0.1f},
  };
  for (const Case& k : cases) {
    UniformQuantizationObserver& obs = *k.obs;
    const std::int64_t n = k.axis < 0 ? 1 : x1.size(k.axis);
    Tensor rmin, rmax;  // the kernels' running statistics
    for (const Tensor& x : {x1, x2}) {
      obs.forward(x);
      const Tensor bmin = empty({n}), bmax = empty({n});
      into("test", x)(x, k.axis, bmin, bmax);
      if (!rmin.defined()) {
        // Per tensor the first update starts from +inf / -inf, per channel from the batch.
        rmin = k.axis < 0 ? full({1}, INFINITY) : bmin;
        rmax = k.axis < 0 ? full({1}, -INFINITY) : bmax;
        if (k.axis >= 0) continue;
      }
      const Tensor nmin = empty({n}), nmax = empty({n});
      update("test", bmin)(rmin, rmax, bmin, bmax, k.averaging, k.axis < 0, nmin, nmax);
      rmin = nmin;
      rmax = nmax;
    }
    INFO("observer " << obs.min_val().dim() << "-d, axis " << k.axis);
    same_bits(rmin, obs.min_val().reshape({n}));
    same_bits(rmax, obs.max_val().reshape({n}));
    const QParams want = obs.calculate_qparams();
    ObserverQParamsRule rule;
    const ObserverOptions& o = obs.options();
    const std::int64_t qmin = obs.quant_min(), qmax = obs.quant_max();
    const float range = static_cast<float>(static_cast<double>(qmax - qmin));
    rule.float_qparams = o.qscheme_ == QScheme::PerChannelAffineFloatQParams;
    rule.unobserved_ok = k.axis < 0;
    rule.floating = {static_cast<float>(o.eps_), range};
    rule.integer = {static_cast<float>(o.eps_),
                    static_cast<float>(static_cast<double>(qmax - qmin) / 2.0),
                    range,
                    qmin,
                    qmax,
                    o.dtype_ == QuantDType::QUInt8 ? 128 : 0,
                    is_symmetric(o.qscheme_)};
    const Tensor scale = empty({n});
    const Tensor zp = empty({n}, TensorOptions().dtype(rule.float_qparams ? kFloat32 : kInt64));
    qparams("test", rmin)("Observer", rmin, rmax, rule, scale, zp);
    same_bits(scale, want.scale);
    same_bits(zp, want.zero_point);
  }
  // Statistics that give no qparams.
  ObserverQParamsRule rule;
  rule.integer = {1e-7f, 127.5f, 255.0f, 0, 255, 0, false};
  const Tensor s = empty({2}), z = empty({2}, TensorOptions().dtype(kInt64));
  auto run = [&](std::vector<float> mn, std::vector<float> mx, bool unobserved_ok) {
    rule.unobserved_ok = unobserved_ok;
    qparams("test", s)("Observer", from_vector(mn, {2}), from_vector(mx, {2}), rule, s, z);
  };
  CHECK_NOTHROW(run({-1.0f, 0.0f}, {1.0f, 0.0f}, false));
  CHECK_THROWS_AS(run({-1.0f, NAN}, {1.0f, 1.0f}, false), ValueError);
  CHECK_THROWS_AS(run({-1.0f, 2.0f}, {1.0f, 1.0f}, false), ValueError);
  CHECK_THROWS_AS(run({-1.0f, -INFINITY}, {1.0f, 1.0f}, false), ValueError);
  CHECK_THROWS_AS(run({-1.0f, INFINITY}, {1.0f, -INFINITY}, false), ValueError);
  CHECK_NOTHROW(run({-1.0f, INFINITY}, {1.0f, -INFINITY}, true));
  CHECK(z.to_vector<std::int64_t>()[1] == 0);
  CHECK(s.to_vector<float>()[1] == 1.0f);
}
