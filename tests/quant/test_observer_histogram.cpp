// Tests of HistogramObserver (quant/observer/histogram_observer.h): golden runs from PyTorch 1.13
// (histogram, running range, the non-linear search's range and the resulting qparams, bit for
// bit) on data whose range ends are integers (where PyTorch's int() truncation of the histc range
// is a no-op), plus range growth (mass is conserved, the range covers every batch), defaults and
// bad input.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>

#include "core/factory.h"
#include "core/npy.h"
#include "quant/observer/histogram_observer.h"
#include "support/fixtures.h"

using namespace qgrad;
using namespace qgrad::ao;
using qgrad_test::float_bits;

namespace {
bool has(const std::string& name) {
  return qgrad_test::has_fixture("quant_ao", name);
}
Tensor load(const std::string& name) {
  return qgrad_test::load_fixture("quant_ao", name);
}
}  // namespace

TEST_CASE("HistogramObserver matches PyTorch", "[quant][observer]") {
  const ObserverOptions opts[] = {
      ObserverOptions(),
      ObserverOptions().dtype(QuantDType::QInt8).qscheme(QScheme::PerTensorSymmetric),
      ObserverOptions().reduce_range(true),
      ObserverOptions().dtype(QuantDType::QInt8),
  };
  int cases = 0;
  for (int i = 0; has("hist_" + std::to_string(i) + "_stats"); ++i, ++cases) {
    INFO("case " << i);
    const std::string p = "hist_" + std::to_string(i) + "_";
    HistogramObserver obs(2048, 128, opts[i]);
    for (int k = 0; has(p + "batch" + std::to_string(k)); ++k)
      obs.forward(load(p + "batch" + std::to_string(k)));
    const std::vector<float> h = obs.histogram().to_vector<float>();
    const std::vector<float> want = load(p + "histogram").to_vector<float>();
    REQUIRE(h.size() == want.size());
    for (std::size_t b = 0; b < h.size(); ++b) {
      INFO("bin " << b);
      REQUIRE(float_bits(h[b]) == float_bits(want[b]));
    }
    const std::vector<double> st = load(p + "stats").to_vector<double>();
    CHECK(obs.min_val().item<float>() == static_cast<float>(st[0]));
    CHECK(obs.max_val().item<float>() == static_cast<float>(st[1]));
    const auto [smin, smax] = obs.non_linear_param_search();
    CHECK(smin == static_cast<float>(st[2]));
    CHECK(smax == static_cast<float>(st[3]));
    const QParams q = obs.calculate_qparams();
    const std::vector<double> qp = load(p + "qparams").to_vector<double>();
    CHECK(q.scale.item<float>() == static_cast<float>(qp[0]));
    CHECK(q.zero_point.item<double>() == qp[1]);
  }
  REQUIRE(cases >= 4);
}

TEST_CASE("HistogramObserver range growth conserves the histogram mass", "[quant][observer]") {
  Generator gen(3);
  HistogramObserver obs;
  double n = 0;
  float lo = 1e30f, hi = -1e30f;
  for (double s : {0.5, 1.0, 3.0, 0.2, 7.0}) {
    Tensor x = normal({5000}, 0.3, s, gen);
    const std::vector<float> v = x.to_vector<float>();
    lo = std::min(lo, *std::min_element(v.begin(), v.end()));
    hi = std::max(hi, *std::max_element(v.begin(), v.end()));
    obs.forward(x);
    n += 5000;
    const std::vector<float> h = obs.histogram().to_vector<float>();
    const double mass = std::accumulate(h.begin(), h.end(), 0.0);
    REQUIRE(mass == Approx(n).epsilon(1e-4));
    REQUIRE(obs.min_val().item<float>() <= lo);
    REQUIRE(obs.max_val().item<float>() >= hi);
  }
  const QParams q = obs.calculate_qparams();
  CHECK(q.scale.item<float>() > 0);
  CHECK(q.zero_point.item<std::int64_t>() >= 0);
  CHECK(q.zero_point.item<std::int64_t>() <= 255);
}

TEST_CASE("HistogramObserver defaults and bad input", "[quant][observer]") {
  HistogramObserver obs;
  CHECK(obs.calculate_qparams().scale.item<float>() == 1.0f);
  obs.forward(full({10}, 2.5));  // constant data: histc widens the range by 1 on each side
  CHECK(obs.min_val().item<float>() == 2.5f);
  const std::vector<float> h = obs.histogram().to_vector<float>();
  CHECK(std::accumulate(h.begin(), h.end(), 0.0) == 10.0);
  REQUIRE_THROWS_AS(obs.forward(from_vector<float>({1.0f, std::nanf("")}, {2})), ValueError);
  REQUIRE_THROWS_AS(HistogramObserver(0), ValueError);
  REQUIRE_THROWS_AS(
      HistogramObserver(2048, 128, ObserverOptions().qscheme(QScheme::PerChannelAffine)),
      ValueError);
  obs.reset_min_max_vals();
  CHECK(obs.calculate_qparams().zero_point.item<std::int64_t>() == 0);
}
