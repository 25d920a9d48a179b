// Tests of the NVIDIA calibrators: MaxCalibrator (per tensor and per channel), the histogram
// collector (edges, growth, int64 counts, zeros), and the entropy / mse / percentile searches
// against hand-derived answers, literal O(n^2) re-implementations of the reference algorithms
// written here, and best bins computed by the Python reference in gen_quant_nvidia.py.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "core/factory.h"
#include "core/npy.h"
#include "ops/binary/binary.h"
#include "quant/nvidia/calibrator.h"
#include "quant/nvidia/histogram_amax.h"
#include "quant/nvidia/tensor_quant.h"
#include "support/fixtures.h"

using namespace qgrad;
using namespace qgrad::nvidia;

namespace {

// pytorch_quantization's _compute_amax_entropy, literally: per candidate i build p and q bin by
// bin (groups from np.linspace / np.digitize semantics), normalise, sum p*log(p/q).
std::int64_t brute_entropy(const std::vector<std::int64_t>& hist, int num_bits, bool is_unsigned,
                           std::int64_t stride, std::int64_t start_bin) {
  std::vector<double> bins(hist.begin(), hist.end());
  bins[0] = bins[1];
  const int nb = 1 << (num_bits - 1 + (is_unsigned ? 1 : 0));
  const auto n = static_cast<std::int64_t>(bins.size());
  double best = std::numeric_limits<double>::infinity();
  std::int64_t best_i = -1;
  for (std::int64_t i = start_bin; i <= n; i += stride) {
    std::vector<double> space(nb + 1);
    const double step = static_cast<double>(i) / nb;
    for (int g = 0; g <= nb; ++g) space[g] = g * step;
    space[nb] = static_cast<double>(i);
    std::vector<int> group(i, -1);
    std::vector<double> sums(nb, 0.0), members(nb, 0.0);
    for (std::int64_t j = 0; j < i; ++j) {
      if (bins[j] == 0) continue;
      int g = 0;
      while (g + 1 <= nb && space[g + 1] <= static_cast<double>(j)) ++g;
      group[j] = g;
      sums[g] += bins[j];
      members[g] += 1;
    }
    std::vector<double> q(i, 0.0), p(bins.begin(), bins.begin() + i);
    for (std::int64_t j = 0; j < i; ++j)
      if (group[j] >= 0) q[j] = sums[group[j]] / members[group[j]];
    double outliers = 0;
    for (std::int64_t j = i; j < n; ++j) outliers += bins[j];
    p[i - 1] += outliers;
    double sp = 0, sq = 0;
    for (std::int64_t j = 0; j < i; ++j) sp += p[j], sq += q[j];
    double kl = 0;
    for (std::int64_t j = 0; j < i; ++j) {
      const double pj = p[j] / sp, qj = sq != 0 ? q[j] / sq : q[j];
      if (pj > 0) kl += qj > 0 ? pj * std::log(pj / qj) : std::numeric_limits<double>::infinity();
    }
    if (kl <= best) best = kl, best_i = i;
  }
  return best_i;
}

// _compute_amax_mse, literally, with qgrad's fake_tensor_quant on the float32 centres.
std::int64_t brute_mse(const Histogram& h, int num_bits, bool is_unsigned, std::int64_t stride,
                       std::int64_t start_bin) {
  const auto n = static_cast<std::int64_t>(h.counts.size());
  std::vector<float> c(n);
  for (std::int64_t j = 0; j < n; ++j) c[j] = static_cast<float>(histogram_center(h, j));
  Tensor centers = from_vector<float>(c, {n});
  double best = std::numeric_limits<double>::infinity();
  std::int64_t best_i = -1;
  for (std::int64_t i = start_bin; i < n; i += stride) {
    std::vector<float> fq =
        fake_tensor_quant(centers, scalar_tensor(c[i]), num_bits, is_unsigned).to_vector<float>();
    double acc = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const double d = static_cast<double>(fq[j]) - c[j];
      acc += d * d * static_cast<double>(h.counts[j]);
    }
    if (acc / n < best) best = acc / n, best_i = i;
  }
  return best_i;
}

std::vector<std::int64_t> random_hist(Generator& gen, std::int64_t n, int zero_pct) {
  std::vector<std::int64_t> v = randint(0, 1000, {n}, gen).to_vector<std::int64_t>();
  std::vector<std::int64_t> z = randint(0, 100, {n}, gen).to_vector<std::int64_t>();
  for (std::int64_t j = 0; j < n; ++j)
    if (z[j] < zero_pct) v[j] = 0;
  v[n - 1] = std::max<std::int64_t>(v[n - 1], 1);
  return v;
}

}  // namespace

TEST_CASE("nvidia MaxCalibrator: per tensor and per channel running max", "[quant][nvidia]") {
  MaxCalibrator per_tensor;
  REQUIRE_THROWS_WITH(per_tensor.compute_amax(), Catch::Contains("no data"));
  per_tensor.collect(from_vector<float>({1, -3, 2}, {3}));
  per_tensor.collect(from_vector<float>({-2.5f, 0.5f, 2}, {3}));
  Tensor a = per_tensor.compute_amax();
  CHECK(a.dim() == 0);
  CHECK(a.item<float>() == 3.0f);

  MaxCalibrator per_channel({0});
  Tensor w = from_vector<float>({1, -2, 3, -4, 0.5f, 0.25f, -7, 1}, {2, 2, 2, 1});
  per_channel.collect(w);
  Tensor ac = per_channel.compute_amax();
  CHECK(ac.shape() == Shape{2, 1, 1, 1});
  CHECK(ac.to_vector<float>() == std::vector<float>{4, 7});
  per_channel.collect(w.select(0, 0).unsqueeze(0).expand({2, 2, 2, 1}) * 2.0);
  CHECK(per_channel.compute_amax().to_vector<float>() == std::vector<float>{8, 8});
  REQUIRE_THROWS_AS(per_channel.collect(zeros({3, 2, 2, 1})), ShapeError);
  MaxCalibrator last({-1, 1});
  last.collect(from_vector<float>({1, 2, -3, 4, -5, 6}, {2, 1, 3}));
  CHECK(last.compute_amax().shape() == Shape{1, 1, 3});
  CHECK(last.compute_amax().to_vector<float>() == std::vector<float>{4, 5, 6});

  MaxCalibrator uns({}, true);
  REQUIRE_THROWS_AS(uns.collect(from_vector<float>({1, -1}, {2})), ValueError);
  REQUIRE_THROWS_AS(per_tensor.collect(from_vector<float>({1, INFINITY}, {2})), ValueError);
  REQUIRE_THROWS_AS(MaxCalibrator({3}).collect(zeros({2, 2})), IndexError);
  per_tensor.reset();
  CHECK_FALSE(per_tensor.has_data());
}

TEST_CASE("nvidia HistogramCalibrator: binning, growth, zeros, int64 counts", "[quant][nvidia]") {
  HistogramCalibratorOptions o;
  o.num_bins = 8;
  HistogramCalibrator cal(o);
  REQUIRE_THROWS_WITH(cal.compute_amax("entropy"), Catch::Contains("no data"));
  cal.collect(zeros({3}));  // zeros before any width: kept for bin 0
  CHECK(cal.histogram().counts.empty());
  CHECK(cal.compute_amax("percentile").item<float>() == 0.0f);
  cal.collect(from_vector<float>({0.5f, -1.0f, 7.9f, 8.0f, -3.5f}, {5}));
  CHECK(cal.histogram().edges.size() == 9);
  CHECK(cal.histogram().edges[1] == 1.0f);
  CHECK(cal.histogram().counts == std::vector<std::int64_t>{4, 1, 0, 1, 0, 0, 0, 2});
  cal.collect(from_vector<float>({20.0f, 8.5f}, {2}));  // grows to ceil(20 / 1) bins
  CHECK(cal.histogram().counts.size() == 20);
  CHECK(cal.histogram().counts[8] == 1);
  CHECK(cal.histogram().counts[19] == 1);
  REQUIRE_THROWS_AS(cal.collect(from_vector<float>({std::nanf("")}, {1})), ValueError);
  REQUIRE_THROWS_AS(cal.compute_amax("kl"), ValueError);

  // skip_zeros drops exact zeros.
  o.skip_zeros = true;
  HistogramCalibrator sk(o);
  sk.collect(from_vector<float>({0, 0, 4}, {3}));
  CHECK(sk.histogram().counts[0] == 0);
  CHECK(sk.histogram().counts[7] == 1);

  // Counts go past 2^24 (the reference's float32 histc counts would stop there).
  HistogramCalibratorOptions big;
  big.num_bins = 4;
  HistogramCalibrator many(big);
  Tensor ones_batch = ones({1 << 20});
  for (int k = 0; k < 16; ++k) many.collect(ones_batch);
  many.collect(ones({5}));
  CHECK(many.histogram().counts[3] == (std::int64_t{1} << 24) + 5);
}

TEST_CASE("nvidia histogram percentile: left edge of the first bin reaching p", "[quant][nvidia]") {
  Histogram h = linear_histogram({1, 1, 1, 1}, 0.5);
  CHECK(percentile_bin(h, 50.0) == 1);
  CHECK(percentile_bin(h, 100.0) == 3);
  CHECK(percentile_bin(h, 0.0) == 0);
  CHECK(percentile_bin(h, 75.0001) == 3);
  CHECK(histogram_edge(h, percentile_bin(h, 50.0)) == 0.5);
  REQUIRE_THROWS_AS(percentile_bin(h, 101.0), ValueError);
  REQUIRE_THROWS_AS(percentile_bin(linear_histogram({0, 0}, 1.0), 50.0), ValueError);
  // 99.99 of 10^4 + 1 samples: the outlier bin is not reached.
  Histogram t = linear_histogram(std::vector<std::int64_t>(100, 0), 1.0);
  t.counts[10] = 10000;
  t.counts[99] = 1;
  CHECK(percentile_bin(t) == 10);
}

TEST_CASE("nvidia histogram entropy: hand-derived and brute force", "[quant][nvidia]") {
  // Uniform mass in bins [0, 200) of 2048: every candidate i >= 200 has p == q (KL exactly 0),
  // so the LAST index of the minimum, i = 2048, wins and amax is the histogram's right end.
  Histogram u = linear_histogram(std::vector<std::int64_t>(2048, 0), 0.01);
  for (int j = 0; j < 200; ++j) u.counts[j] = 5;
  CHECK(entropy_best_bin(u) == 2048);
  CHECK(brute_entropy(u.counts, 8, false, 1, 128) == 2048);
  CHECK(histogram_edge(u, 2048) == static_cast<float>(20.48));

  Generator gen(123);
  for (int trial = 0; trial < 6; ++trial) {
    const std::int64_t n = 256 + 64 * trial;
    std::vector<std::int64_t> h = random_hist(gen, n, 10 * trial);
    for (auto [bits, uns, stride, start] : {std::tuple<int, bool, int, int>{8, false, 1, 128},
                                            {4, false, 1, 16},
                                            {5, true, 2, 40},
                                            {8, false, 5, 1}}) {
      INFO("trial " << trial << " bits " << bits << " stride " << stride);
      CHECK(entropy_best_bin(linear_histogram(h, 1.0), bits, uns, stride, start) ==
            brute_entropy(h, bits, uns, stride, start));
    }
  }
  // Piecewise-uniform groups (exact ties inside) with a long zero gap.
  std::vector<std::int64_t> pw(400, 0);
  for (int j = 0; j < 128; ++j) pw[j] = 7 + (j / 32);
  pw[399] = 2;
  CHECK(entropy_best_bin(linear_histogram(pw, 1.0), 4, false, 1, 8) ==
        brute_entropy(pw, 4, false, 1, 8));
  REQUIRE_THROWS_AS(entropy_best_bin(linear_histogram(pw, 1.0), 8, false, 1, 401), ValueError);
  REQUIRE_THROWS_AS(entropy_best_bin(linear_histogram(pw, 1.0), 8, false, 0, 128), ValueError);
}

TEST_CASE("nvidia histogram entropy: matches the Python reference's winners", "[quant][nvidia]") {
  const std::string dir = qgrad_test::fixture_path("quant_nvidia", "");
  const std::vector<std::int64_t> best =
      load_npy(dir + "entropy_best_bins.npy").to_vector<std::int64_t>();
  std::size_t k = 0;
  for (const char* name : {"entropy_hist1.npy", "entropy_hist2.npy"}) {
    const Histogram h = linear_histogram(load_npy(dir + name).to_vector<std::int64_t>(), 1.0);
    for (auto [bits, uns, start] :
         {std::tuple<int, bool, int>{8, false, 128}, {4, false, 64}, {7, true, 128}}) {
      INFO(name << " bits " << bits);
      CHECK(entropy_best_bin(h, bits, uns, 1, start) == best[k++]);
    }
    CHECK(entropy_best_bin(h, 8, false, 3, 100) == best[k++]);
  }
}

TEST_CASE("nvidia histogram mse: first minimiser, brute force", "[quant][nvidia]") {
  Generator gen(77);
  for (int trial = 0; trial < 4; ++trial) {
    Histogram h = linear_histogram(random_hist(gen, 300, 20 * trial), 0.0123 * (trial + 1));
    for (auto [bits, uns, stride, start] :
         {std::tuple<int, bool, int, int>{8, false, 1, 128}, {4, true, 3, 10}}) {
      INFO("trial " << trial << " bits " << bits);
      CHECK(mse_best_bin(h, bits, uns, stride, start) == brute_mse(h, bits, uns, stride, start));
    }
  }
  // All mass in one bin k: any amax whose grid hits c_k exactly gives mse 0; the first such
  // candidate (at or after start) wins. With 2 bits (grid {-1, 0, 1} * amax) only amax = c_k does.
  Histogram one = linear_histogram(std::vector<std::int64_t>(64, 0), 1.0);
  one.counts[40] = 9;
  CHECK(mse_best_bin(one, 2, false, 1, 1) == 40);
  CHECK(histogram_center(one, 40) == 40.5);
}

TEST_CASE("nvidia HistogramCalibrator: compute_amax methods", "[quant][nvidia]") {
  Generator gen(4);
  HistogramCalibrator cal;
  cal.collect(randn({20000}, gen));
  cal.collect(randn({20000}, gen) * 1.5);
  const Histogram& h = cal.histogram();
  CHECK(h.counts.size() >= 2048);
  const double e = cal.compute_amax("entropy").item<double>();
  const double m = cal.compute_amax("mse").item<double>();
  const double p = cal.compute_amax("percentile", {128, 1, 99.0}).item<double>();
  CHECK(e == histogram_edge(h, entropy_best_bin(h)));
  CHECK(m == histogram_center(h, mse_best_bin(h)));
  CHECK(p == histogram_edge(h, percentile_bin(h, 99.0)));
  // Sane magnitudes for N(0, ~1.2): all well inside (0, max].
  const double top = histogram_edge(h, static_cast<std::int64_t>(h.counts.size()));
  for (double v : {e, m, p}) {
    CHECK(v > 1.0);
    CHECK(v <= top);
  }
}

TEST_CASE("nvidia histogram entropy timing", "[.][benchmark][nvidia]") {
  // Not a test: prints how long the entropy search takes (reported in the hand-over notes).
  Generator gen(1);
  for (std::int64_t n : {2048, 8192, 32768}) {
    Histogram h = linear_histogram(random_hist(gen, n, 5), 1.0);
    const auto t0 = std::chrono::steady_clock::now();
    const std::int64_t best = entropy_best_bin(h);
    const auto t1 = std::chrono::steady_clock::now();
    std::printf("entropy_best_bin: %lld bins -> %lld in %.3f ms\n", static_cast<long long>(n),
                static_cast<long long>(best),
                std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  Histogram h = linear_histogram(random_hist(gen, 2048, 5), 1.0);
  const auto t0 = std::chrono::steady_clock::now();
  brute_entropy(h.counts, 8, false, 1, 128);
  const auto t1 = std::chrono::steady_clock::now();
  std::printf("brute force O(n^2) reference, 2048 bins: %.3f ms\n",
              std::chrono::duration<double, std::milli>(t1 - t0).count());
}
