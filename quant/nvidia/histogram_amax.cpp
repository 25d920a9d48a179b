// Entropy (KL), MSE and percentile amax searches over a |x| histogram.
#include "quant/nvidia/histogram_amax.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "quant/nvidia/tensor_quant.h"

namespace qgrad::nvidia {

namespace {

void check_histogram(const char* op, const Histogram& h, std::int64_t min_bins) {
  QGRAD_CHECK(static_cast<std::int64_t>(h.counts.size()) >= min_bins, ValueError, op,
              ": histogram has ", h.counts.size(), " bins, need at least ", min_bins);
  QGRAD_CHECK(h.edges.size() >= h.counts.size() + 1, ValueError, op, ": histogram has ",
              h.edges.size(), " edges for ", h.counts.size(), " bins, need at least ",
              h.counts.size() + 1);
  std::int64_t total = 0;
  for (std::int64_t c : h.counts) {
    QGRAD_CHECK(c >= 0, ValueError, op, ": histogram counts must be >= 0, got ", c);
    total += c;
  }
  QGRAD_CHECK(total > 0, ValueError, op, ": histogram is empty (no data collected)");
}

void check_search(const char* op, const Histogram& h, std::int64_t stride, std::int64_t start_bin,
                  std::int64_t last) {
  QGRAD_CHECK(stride >= 1, ValueError, op, ": stride must be >= 1, got ", stride);
  QGRAD_CHECK(start_bin >= 1 && start_bin <= last, ValueError, op, ": start_bin ", start_bin,
              " leaves no candidate for a histogram of ", h.counts.size(), " bins");
}

}  // namespace

Histogram linear_histogram(std::vector<std::int64_t> counts, double bin_width) {
  QGRAD_CHECK(bin_width > 0 && std::isfinite(bin_width), ValueError,
              "linear_histogram: bin_width must be finite and > 0, got ", bin_width);
  Histogram h;
  h.edges.resize(counts.size() + 1);
  for (std::size_t j = 0; j < h.edges.size(); ++j)
    h.edges[j] = static_cast<float>(static_cast<double>(j) * bin_width);
  h.counts = std::move(counts);
  return h;
}

double histogram_edge(const Histogram& h, std::int64_t i) {
  QGRAD_CHECK(i >= 0 && i < static_cast<std::int64_t>(h.edges.size()), IndexError,
              "histogram_edge: index ", i, " is out of range for ", h.edges.size(), " edges");
  return h.edges[static_cast<std::size_t>(i)];
}

double histogram_center(const Histogram& h, std::int64_t i) {
  QGRAD_CHECK(i >= 0 && i + 1 < static_cast<std::int64_t>(h.edges.size()), IndexError,
              "histogram_center: bin ", i, " is out of range for ", h.edges.size(), " edges");
  return (h.edges[static_cast<std::size_t>(i)] + h.edges[static_cast<std::size_t>(i) + 1]) / 2.0f;
}

std::vector<float> torch_linspace_f32(float end, std::int64_t steps) {
  QGRAD_CHECK(steps >= 2, ValueError, "torch_linspace_f32: steps must be >= 2, got ", steps);
  QGRAD_CHECK(std::isfinite(end), ValueError, "torch_linspace_f32: end must be finite, got ", end);
  constexpr std::int64_t V = 8;  // AVX2: 8 float lanes, two vectors per loop step
  const float step = end / static_cast<float>(steps - 1);
  const std::int64_t half = steps / 2;
  std::vector<float> out(static_cast<std::size_t>(steps));
  // The upper half counts back from `end`; AVX2 code contracts this multiply-subtract.
  auto upper = [&](std::int64_t idx) {
    return std::fma(-step, static_cast<float>(steps - idx - 1), end);
  };
  std::int64_t i = 0;
  for (; i + 2 * V <= steps; i += 2 * V) {
    for (std::int64_t v = i; v < i + 2 * V; v += V) {
      const float base = v < half ? step * static_cast<float>(v) : upper(v);
      for (std::int64_t k = 0; k < V; ++k) {
        const float lane = static_cast<float>(k) * step;  // rounded, then added (not fused)
        out[static_cast<std::size_t>(v + k)] = base + lane;
      }
    }
  }
  for (; i < steps; ++i)
    out[static_cast<std::size_t>(i)] = i < half ? step * static_cast<float>(i) : upper(i);
  return out;
}

std::vector<float> torch_arange_f32(double end, double step) {
  QGRAD_CHECK(step > 0 && std::isfinite(step) && std::isfinite(end) && end >= 0, ValueError,
              "torch_arange_f32: need a finite end >= 0 and step > 0, got end ", end, ", step ",
              step);
  constexpr std::int64_t V = 8;
  const auto size = static_cast<std::int64_t>(std::ceil(end / step));
  std::vector<float> out(static_cast<std::size_t>(size));
  std::int64_t i = 0;
  for (; i + 2 * V <= size; i += 2 * V) {
    for (std::int64_t v = i; v < i + 2 * V; v += V) {
      // Vectorized<float>::arange takes its base as float, its step as double.
      const float base = static_cast<float>(step * static_cast<double>(v));
      for (std::int64_t k = 0; k < V; ++k) {
        const double lane = static_cast<double>(k) * step;
        out[static_cast<std::size_t>(v + k)] = static_cast<float>(static_cast<double>(base) + lane);
      }
    }
  }
  for (; i < size; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<float>(step * static_cast<double>(i));
  return out;
}

std::int64_t entropy_best_bin(const Histogram& h, int num_bits, bool is_unsigned,
                              std::int64_t stride, std::int64_t start_bin) {
  const char* op = "entropy_amax";
  check_histogram(op, h, 2);
  const int mag = num_bits - 1 + (is_unsigned ? 1 : 0);
  QGRAD_CHECK(mag >= 0 && num_bits <= 24, ValueError, op, ": num_bits ", num_bits,
              " is out of range");
  const auto n = static_cast<std::int64_t>(h.counts.size());
  check_search(op, h, stride, start_bin, n);
  const std::int64_t nb = std::int64_t{1} << mag;

  std::vector<std::int64_t> c = h.counts;
  c[0] = c[1];  // the reference replaces the first bin's count by the second's
  // Prefix sums: counts (exact), non-empty bins, c*log(c) (long double against cancellation).
  std::vector<std::int64_t> S(n + 1, 0), Z(n + 1, 0);
  std::vector<long double> F(n + 1, 0.0L);
  for (std::int64_t j = 0; j < n; ++j) {
    S[j + 1] = S[j] + c[j];
    Z[j + 1] = Z[j] + (c[j] > 0);
    const long double cj = static_cast<long double>(c[j]);
    F[j + 1] = F[j] + (c[j] > 0 ? cj * std::log(cj) : 0.0L);
  }
  // next_nz[j]: first non-empty bin >= j; next_diff[j]: first non-empty bin after j whose count
  // differs from c[j]. A group is uniform iff next_diff[first non-empty] is past its end.
  std::vector<std::int64_t> next_nz(n + 1, n), next_diff(n + 1, n);
  for (std::int64_t j = n - 1; j >= 0; --j) {
    next_nz[j] = c[j] > 0 ? j : next_nz[j + 1];
    const std::int64_t k = next_nz[j + 1];
    next_diff[j] = (k < n && c[k] == c[j]) ? next_diff[k] : k;
  }
  const double N = static_cast<double>(S[n]);
  const double logN = std::log(N);

  double best = std::numeric_limits<double>::infinity();
  std::int64_t best_i = -1;
  for (std::int64_t i = start_bin; i <= n; i += stride) {
    const std::int64_t T = S[n] - S[i];
    double kl;
    if (T > 0 && c[i - 1] == 0) {
      kl = std::numeric_limits<double>::infinity();  // p > 0 where q == 0
    } else {
      long double u = 0.0L;
      double a_last = 0;
      const std::int64_t g_last = ((i - 1) * nb) / i;
      for (std::int64_t g = 0; g < nb; ++g) {
        const std::int64_t lo = (g * i + nb - 1) / nb;
        const std::int64_t hi = ((g + 1) * i + nb - 1) / nb;
        const std::int64_t z = Z[hi] - Z[lo];
        if (z == 0) continue;
        const std::int64_t s = S[hi] - S[lo];
        const double a = static_cast<double>(s) / static_cast<double>(z);
        if (g == g_last) a_last = a;
        if (next_diff[next_nz[lo]] >= hi) continue;  // all non-empty bins equal: exactly 0
        u += (F[hi] - F[lo]) - static_cast<long double>(static_cast<double>(s) * std::log(a));
      }
      if (T > 0) {
        const double cl = static_cast<double>(c[i - 1]);
        const double P = static_cast<double>(c[i - 1] + T);
        u += static_cast<long double>(P * (std::log(P) - std::log(a_last))) -
             static_cast<long double>(cl * (std::log(cl) - std::log(a_last)));
      }
      kl = static_cast<double>(u) / N + (std::log(static_cast<double>(S[n] - T)) - logN);
    }
    if (kl <= best) {  // <=: the last index of the minimum wins
      best = kl;
      best_i = i;
    }
  }
  return best_i;
}

std::int64_t mse_best_bin(const Histogram& h, int num_bits, bool is_unsigned, std::int64_t stride,
                          std::int64_t start_bin) {
  const char* op = "mse_amax";
  check_histogram(op, h, 2);
  const auto n = static_cast<std::int64_t>(h.counts.size());
  check_search(op, h, stride, start_bin, n - 1);
  const IntRange r = int_quant_range(num_bits, is_unsigned, /*narrow_range=*/true, op);
  const float lo = static_cast<float>(r.min_bound), hi = static_cast<float>(r.max_bound);
  std::vector<float> centers(static_cast<std::size_t>(n));
  std::vector<std::int64_t> nz;
  for (std::int64_t j = 0; j < n; ++j) {
    centers[j] = static_cast<float>(histogram_center(h, j));
    if (h.counts[j] > 0) nz.push_back(j);
  }
  double best = std::numeric_limits<double>::infinity();
  std::int64_t best_i = -1;
  for (std::int64_t i = start_bin; i < n; i += stride) {
    const float amax = centers[i];
    const bool zero = amax <= static_cast<float>(kMinAmax);
    const float s = hi / amax;
    const float sq = zero ? 0.0f : s, sd = zero ? 1.0f : s;
    double acc = 0;
    for (std::int64_t j : nz) {
      const float cj = centers[j];
      const float fq = std::min(std::max(std::nearbyint(cj * sq), lo), hi) / sd;
      const double d = static_cast<double>(fq) - static_cast<double>(cj);
      acc += d * d * static_cast<double>(h.counts[j]);
    }
    const double mse = acc / static_cast<double>(n);
    if (mse < best) {  // <: the first minimiser wins
      best = mse;
      best_i = i;
    }
  }
  return best_i;
}

std::int64_t percentile_bin(const Histogram& h, double percentile) {
  const char* op = "percentile_amax";
  QGRAD_CHECK(percentile >= 0 && percentile <= 100, ValueError, op, ": percentile ", percentile,
              " is outside [0, 100]");
  check_histogram(op, h, 1);
  std::int64_t total = 0;
  for (std::int64_t c : h.counts) total += c;
  // np.searchsorted(np.cumsum(hist / total), percentile / 100): float64, in bin order.
  const double target = percentile / 100.0;
  const double dtotal = static_cast<double>(total);
  double cdf = 0;
  const auto n = static_cast<std::int64_t>(h.counts.size());
  for (std::int64_t j = 0; j < n; ++j) {
    cdf += static_cast<double>(h.counts[static_cast<std::size_t>(j)]) / dtotal;
    if (cdf >= target) return j;
  }
  return n;  // the rounded cdf stayed below the target: the last edge
}

}  // namespace qgrad::nvidia
