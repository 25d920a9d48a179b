// HistogramObserver: histogram accumulation with range growth, and PyTorch's non-linear search,
// reproduced in PyTorch's float32 / double arithmetic step by step. The batch is read only by the
// "observer.aminmax" and "observer.histc" kernels; the running histogram is host state.
#include "quant/observer/histogram_observer.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "ops/device_check.h"
#include "quant/observer/aminmax_kernels.h"
#include "quant/observer/histc_kernels.h"

namespace qgrad::ao {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const char* kName = "HistogramObserver";

// c10::div_floor_floating: Python's floor division for floats, as torch.div(rounding_mode='floor').
float div_floor(float a, float b) {
  if (b == 0) return a / b;
  const float mod = std::fmod(a, b);
  float div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1.0f;
  float fl;
  if (div != 0) {
    fl = std::floor(div);
    if (div - fl > 0.5f) fl += 1.0f;
  } else {
    fl = std::copysign(0.0f, a / b);
  }
  return fl;
}

// PyTorch's _get_norm: density * (end^3 - begin^3) / 3, in float32.
float l2_norm(float begin, float end, float density) {
  const float e3 = end * end * end, b3 = begin * begin * begin;
  return density * ((e3 - b3) / 3.0f);
}

}  // namespace

HistogramObserver::HistogramObserver(std::int64_t bins, std::int64_t upsample_rate,
                                     const ObserverOptions& options)
    : UniformQuantizationObserver(kName, options, /*per_channel=*/false),
      bins_(bins),
      upsample_rate_(upsample_rate) {
  QGRAD_CHECK(bins >= 1 && upsample_rate >= 1, ValueError, kName,
              ": bins and upsample_rate must be >= 1, got ", bins, " and ", upsample_rate);
  int bits = 8;
  if (options.dtype_ == QuantDType::QInt32) bits = 32;
  if (options.dtype_ == QuantDType::QUInt4x2) bits = 8;  // torch.iinfo(quint4x2).bits is 8
  dst_nbins_ = std::ldexp(1.0, bits);
  histogram_ = zeros({bins}, TensorOptions().dtype(kFloat32));
  min_val_ = scalar_tensor(kInf, TensorOptions().dtype(kFloat32));
  max_val_ = scalar_tensor(-kInf, TensorOptions().dtype(kFloat32));
}

void HistogramObserver::reset_min_max_vals() {
  histogram_.zero_();
  min_val_.fill_(kInf);
  max_val_.fill_(-kInf);
}

Tensor HistogramObserver::forward(const Tensor& x_orig) {
  if (x_orig.defined() && x_orig.numel() == 0) return x_orig;
  static const KernelTable<AminmaxKernel>& aminmax_table = kernel_table(kAminmaxKernels);
  static const KernelTable<HistcKernel>& histc_table = kernel_table(kHistcKernels);
  require_floating(kName, "input", x_orig);
  AminmaxKernel& aminmax = aminmax_table(kName, x_orig);
  HistcKernel& histc = histc_table(kName, x_orig);
  NoGradGuard no_grad;
  // Rounded to float32 once here, as both kernels read it at that precision.
  const Tensor xf = x_orig.dtype() == kFloat32 ? x_orig.detach() : x_orig.detach().to(kFloat32);
  MinMax mm = aminmax(xf);
  // With a group: the global batch's range first (so every rank bins over the same range and
  // every rank raises the same error), then the local counts summed below.
  reduce_min_max(mm.min, mm.max);
  QGRAD_CHECK(std::isfinite(mm.min) && std::isfinite(mm.max), ValueError, kName,
              ": inputs must be finite, got min ", mm.min, " max ", mm.max);
  const float min_val = min_val_.item<float>(), max_val = max_val_.item<float>();
  const bool uninitialized = min_val == kInf && max_val == -kInf;
  if (uninitialized || min_val == max_val) {
    min_val_.fill_(mm.min);
    max_val_.fill_(mm.max);
    const std::vector<float> h = global_counts(histc(xf, bins_, mm.min, mm.max));
    histogram_ = from_vector<float>(h, {bins_});
    return x_orig;
  }
  float cmin = std::min(mm.min, min_val);
  float cmax = std::max(mm.max, max_val);
  // _adjust_min_max, float32 tensor arithmetic.
  const float hist_bin_width = (max_val - min_val) / static_cast<float>(bins_ * upsample_rate_);
  const float span = static_cast<float>(bins_) * hist_bin_width;
  const auto downsample = static_cast<std::int64_t>(std::ceil((cmax - cmin) / span));
  const float e = static_cast<float>(downsample) * span - (cmax - cmin);
  cmax = cmax + e;
  const auto start_idx =
      static_cast<std::int64_t>(std::nearbyint((min_val - cmin) / hist_bin_width));
  std::vector<float> combined = global_counts(histc(xf, bins_, cmin, cmax));
  const std::vector<float> old = histogram_.to_vector<float>();
  if (cmin == min_val && cmax == max_val) {
    for (std::size_t i = 0; i < combined.size(); ++i) combined[i] += old[i];
  } else {
    // _combine_histograms: upsample the old histogram by repetition, place it at start_idx on the
    // fine grid, integrate in double, sample every downsample_rate cells, difference, divide.
    const std::int64_t fine = bins_ * downsample;
    QGRAD_CHECK(start_idx >= 0 && start_idx + bins_ * upsample_rate_ <= fine, ValueError, kName,
                ": internal histogram alignment failed (start ", start_idx, ", downsample ",
                downsample, ")");
    std::vector<double> integral(static_cast<std::size_t>(bins_));
    double run = 0;
    std::int64_t out = 0;
    for (std::int64_t j = 0; j < fine; ++j) {
      const std::int64_t src = j - start_idx;
      if (src >= 0 && src < bins_ * upsample_rate_)
        run += static_cast<double>(old[static_cast<std::size_t>(src / upsample_rate_)]);
      if ((j + 1) % downsample == 0) integral[static_cast<std::size_t>(out++)] = run;
    }
    for (std::int64_t i = 0; i < bins_; ++i) {
      // shifted_integral_histogram is a float32 tensor: the previous integral is rounded to float.
      const double shifted =
          i == 0
              ? 0.0
              : static_cast<double>(static_cast<float>(integral[static_cast<std::size_t>(i - 1)]));
      const double interp =
          (integral[static_cast<std::size_t>(i)] - shifted) / static_cast<double>(upsample_rate_);
      combined[static_cast<std::size_t>(i)] += static_cast<float>(interp);
    }
  }
  histogram_ = from_vector<float>(combined, {bins_});
  min_val_.fill_(cmin);
  max_val_.fill_(cmax);
  return x_orig;
}

std::vector<float> HistogramObserver::global_counts(std::vector<float> counts) const {
  if (!statistics_synced()) return counts;
  // histc's counts are whole numbers: summed as integers they are exact.
  std::vector<std::int64_t> c(counts.begin(), counts.end());
  reduce_sum(c);
  for (std::size_t i = 0; i < c.size(); ++i) counts[i] = static_cast<float>(c[i]);
  return counts;
}

double HistogramObserver::quantization_error(std::int64_t start_bin, std::int64_t end_bin) const {
  const double bin_width_d =
      (static_cast<double>(max_val_.item<float>()) - static_cast<double>(min_val_.item<float>())) /
      static_cast<double>(bins_);
  const double dst_bin_width_d =
      bin_width_d * static_cast<double>(end_bin - start_bin + 1) / dst_nbins_;
  if (dst_bin_width_d == 0.0) return 0.0;
  // Python floats enter float32 tensor arithmetic as float32 scalars.
  const float bin_width = static_cast<float>(bin_width_d);
  const float dst_bin_width = static_cast<float>(dst_bin_width_d);
  const float half_dst = static_cast<float>(dst_bin_width_d / 2);
  const float neg_half_dst = static_cast<float>(-dst_bin_width_d / 2);
  const float max_dst_bin = static_cast<float>(dst_nbins_ - 1);
  const std::vector<float> hist = histogram_.to_vector<float>();
  double total = 0;
  for (std::int64_t i = 0; i < bins_; ++i) {
    const float src_begin = static_cast<float>(i - start_bin) * bin_width;
    const float src_end = src_begin + bin_width;
    const float dst_of_begin =
        std::min(std::max(div_floor(src_begin, dst_bin_width), 0.0f), max_dst_bin);
    const float dst_of_begin_center = (dst_of_begin + 0.5f) * dst_bin_width;
    const float dst_of_end =
        std::min(std::max(div_floor(src_end, dst_bin_width), 0.0f), max_dst_bin);
    const float density = hist[static_cast<std::size_t>(i)] / bin_width;
    float norm = 0.0f;
    norm += l2_norm(src_begin - dst_of_begin_center, half_dst, density);
    norm += (dst_of_end - dst_of_begin - 1.0f) * l2_norm(neg_half_dst, half_dst, density);
    const float dst_of_end_center = dst_of_end * dst_bin_width + half_dst;
    norm += l2_norm(neg_half_dst, src_end - dst_of_end_center, density);
    total += static_cast<double>(norm);
  }
  return total;
}

std::pair<float, float> HistogramObserver::non_linear_param_search() const {
  const std::vector<float> hist = histogram_.to_vector<float>();
  const float min_val = min_val_.item<float>(), max_val = max_val_.item<float>();
  const float bin_width = (max_val - min_val) / static_cast<float>(bins_);
  // total: a float32 sum; cSum: cumulative sums accumulated in double, stored as float32.
  float total_f = 0;
  {
    double acc = 0;
    for (float h : hist) acc += h;
    total_f = static_cast<float>(acc);
  }
  const double total = total_f;
  std::vector<float> csum(hist.size());
  double acc = 0;
  for (std::size_t i = 0; i < hist.size(); ++i) {
    acc += hist[i];
    csum[i] = static_cast<float>(acc);
  }
  const double stepsize = 1e-5;
  double alpha = 0.0, beta = 1.0;
  std::int64_t start_bin = 0, end_bin = bins_ - 1;
  double norm_min = std::numeric_limits<double>::infinity();
  while (alpha < beta) {
    const double next_alpha = alpha + stepsize, next_beta = beta - stepsize;
    std::int64_t l = start_bin, r = end_bin;
    const float a_thr = static_cast<float>(next_alpha * total);
    const float b_thr = static_cast<float>(next_beta * total);
    while (l < end_bin && csum[static_cast<std::size_t>(l)] < a_thr) ++l;
    while (r > start_bin && csum[static_cast<std::size_t>(r)] > b_thr) --r;
    std::int64_t next_start = start_bin, next_end = end_bin;
    if ((l - start_bin) > (end_bin - r)) {
      next_start = l;
      alpha = next_alpha;
    } else {
      next_end = r;
      beta = next_beta;
    }
    if (next_start == start_bin && next_end == end_bin) continue;
    const double norm = quantization_error(next_start, next_end);
    if (norm > norm_min) break;
    norm_min = norm;
    start_bin = next_start;
    end_bin = next_end;
  }
  const float new_min = min_val + bin_width * static_cast<float>(start_bin);
  const float new_max = min_val + bin_width * static_cast<float>(end_bin + 1);
  return {new_min, new_max};
}

QParams HistogramObserver::calculate_qparams() const {
  const float min_val = min_val_.item<float>(), max_val = max_val_.item<float>();
  if (min_val == kInf && max_val == -kInf) return calculate_qparams_from(min_val_, max_val_);
  const auto [mn, mx] = non_linear_param_search();
  return calculate_qparams_from(scalar_tensor(mn), scalar_tensor(mx));
}

}  // namespace qgrad::ao
