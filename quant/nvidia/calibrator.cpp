// MaxCalibrator and HistogramCalibrator: statistics collection and amax computation.
#include "quant/nvidia/calibrator.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/factory.h"
#include "core/strided_loop.h"
#include "ops/device_check.h"
#include "quant/nvidia/block_layout.h"
#include "quant/nvidia/quant_apply.h"
#include "quant/nvidia/tensor_quant_cpu.h"

namespace qgrad::nvidia {

MaxCalibrator::MaxCalibrator(std::vector<std::int64_t> axis, bool is_unsigned)
    : axis_(std::move(axis)), unsigned_(is_unsigned) {
  std::set<std::int64_t> seen(axis_.begin(), axis_.end());
  QGRAD_CHECK(seen.size() == axis_.size(), ValueError, "MaxCalibrator: axis repeats an entry");
}

void MaxCalibrator::collect(const Tensor& x) {
  const char* op = "MaxCalibrator::collect";
  require_floating(op, "input", x);
  require_cpu(op, x);
  const auto rank = static_cast<std::int64_t>(x.dim());
  Shape block(x.shape().size(), 0);  // reduced axes: whole axis
  for (std::int64_t a : axis_) {
    QGRAD_CHECK(a >= -rank && a < rank, IndexError, op, ": axis ", a,
                " is out of range for an input of shape ", x.shape());
    block[static_cast<std::size_t>(a < 0 ? a + rank : a)] = 1;  // kept axis: own amax
  }
  const Tensor xc = x.contiguous();
  QGRAD_CHECK(!unsigned_ || !any_negative_cpu(xc), ValueError, op,
              ": calibrator is unsigned but the data has negative values");
  const BlockLayout L = make_block_layout(x.shape(), block);
  bool nonfinite = false;
  Tensor local = block_absmax(xc, L, &nonfinite);
  QGRAD_CHECK(!nonfinite, ValueError, op, ": data contains NaN or Inf (shape ", x.shape(), ")");
  if (axis_.empty()) local = local.reshape({});
  if (!amax_.defined()) {
    amax_ = local;
    input_shape_ = x.shape();
    return;
  }
  QGRAD_CHECK(local.shape() == amax_.shape(), ShapeError, op, ": amax shape changed from ",
              amax_.shape(), " to ", local.shape(), " (input shape ", x.shape(), ")");
  Tensor merged = amax_.to(x.dtype()).contiguous().clone();
  QGRAD_DISPATCH_FLOAT(x.dtype(), op, [&] {
    scalar_t* pm = merged.data_ptr<scalar_t>();
    const scalar_t* pl = local.data_ptr<scalar_t>();
    for (std::int64_t i = 0; i < merged.numel(); ++i) pm[i] = std::max(pm[i], pl[i]);
  });
  amax_ = merged;
}

Tensor MaxCalibrator::compute_amax() const {
  QGRAD_CHECK(amax_.defined(), ValueError,
              "MaxCalibrator::compute_amax: no data collected; call collect() first");
  return amax_.clone();
}

void MaxCalibrator::reset() {
  amax_ = Tensor();
  input_shape_.clear();
}

HistogramCalibrator::HistogramCalibrator(HistogramCalibratorOptions opts) : opts_(opts) {
  const char* op = "HistogramCalibrator";
  QGRAD_CHECK(opts_.num_bins >= 2, ValueError, op, ": num_bins must be >= 2, got ", opts_.num_bins);
  const int mag = opts_.num_bits - 1 + (opts_.is_unsigned ? 1 : 0);
  QGRAD_CHECK(mag >= 1 && opts_.num_bits <= 24, ValueError, op, ": num_bits ", opts_.num_bits,
              " is out of range");
}

void HistogramCalibrator::collect(const Tensor& x) {
  const char* op = "HistogramCalibrator::collect";
  require_floating(op, "input", x);
  require_cpu(op, x);
  const Tensor xd = x.detach().to(kFloat64).contiguous();
  const double* p = xd.data_ptr<double>();
  const std::int64_t n = xd.numel();
  double xmax = 0;
  std::int64_t zeros_count = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double a = std::fabs(p[i]);
    QGRAD_CHECK(std::isfinite(a), ValueError, op, ": data contains NaN or Inf (shape ", x.shape(),
                ")");
    xmax = std::max(xmax, a);
    zeros_count += a == 0;
  }
  const std::int64_t counted_zeros = opts_.skip_zeros ? 0 : zeros_count;
  if (hist_.counts.empty()) {
    if (xmax == 0) {  // no width yet: keep the zeros for bin 0
      pending_zeros_ += counted_zeros;
      return;
    }
    hist_.bin_width = xmax / static_cast<double>(opts_.num_bins);
    hist_.counts.assign(static_cast<std::size_t>(opts_.num_bins), 0);
    hist_.counts[0] += pending_zeros_;
    pending_zeros_ = 0;
  } else if (xmax > static_cast<double>(hist_.counts.size()) * hist_.bin_width) {
    const auto grown = static_cast<std::size_t>(std::ceil(xmax / hist_.bin_width));
    hist_.counts.resize(std::max(grown, hist_.counts.size()), 0);
  }
  const double w = hist_.bin_width;
  const auto nbins = static_cast<std::int64_t>(hist_.counts.size());
  const bool skip = opts_.skip_zeros;
  std::vector<std::int64_t>& counts = hist_.counts;
  parallel_for(n, kParallelGrain, [&](std::int64_t b, std::int64_t e) {
    std::vector<std::int64_t> local(static_cast<std::size_t>(nbins), 0);
    for (std::int64_t i = b; i < e; ++i) {
      const double a = std::fabs(p[i]);
      if (skip && a == 0) continue;
      // a <= xmax, so a / w is at most about nbins: the conversion is always in range.
      const auto idx = std::min(nbins - 1, static_cast<std::int64_t>(std::floor(a / w)));
      ++local[static_cast<std::size_t>(idx)];
    }
#pragma omp critical(qgrad_nvidia_histogram)
    for (std::int64_t k = 0; k < nbins; ++k) counts[static_cast<std::size_t>(k)] += local[k];
  });
}

Tensor HistogramCalibrator::compute_amax(const std::string& method,
                                         const HistogramAmaxOptions& o) const {
  const char* op = "HistogramCalibrator::compute_amax";
  QGRAD_CHECK(method == "entropy" || method == "mse" || method == "percentile", ValueError, op,
              ": unknown method '", method, "' (expected entropy, mse or percentile)");
  QGRAD_CHECK(has_data(), ValueError, op, ": no data collected; call collect() first");
  if (hist_.counts.empty()) return scalar_tensor(0.0);  // only zeros were seen
  double amax = 0;
  if (method == "entropy") {
    amax = histogram_edge(
        hist_, entropy_best_bin(hist_, opts_.num_bits, opts_.is_unsigned, o.stride, o.start_bin));
  } else if (method == "mse") {
    amax = histogram_center(
        hist_, mse_best_bin(hist_, opts_.num_bits, opts_.is_unsigned, o.stride, o.start_bin));
  } else {
    amax = histogram_edge(hist_, percentile_bin(hist_, o.percentile));
  }
  return scalar_tensor(amax);
}

void HistogramCalibrator::reset() {
  hist_ = Histogram{};
  pending_zeros_ = 0;
}

}  // namespace qgrad::nvidia
