// MaxCalibrator and HistogramCalibrator: statistics collection (the batches read only by the
// "nvidia.*" kernel tables) and amax computation from the host-side running state.
#include "quant/nvidia/calibrator.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/factory.h"
#include "ops/device_check.h"
#include "quant/nvidia/block_layout.h"
#include "quant/nvidia/calibrator_kernels.h"
#include "quant/nvidia/quant_apply.h"
#include "quant/nvidia/tensor_quant_kernels.h"

namespace qgrad::nvidia {

MaxCalibrator::MaxCalibrator(std::vector<std::int64_t> axis, bool is_unsigned)
    : axis_(std::move(axis)), unsigned_(is_unsigned) {
  std::set<std::int64_t> seen(axis_.begin(), axis_.end());
  QGRAD_CHECK(seen.size() == axis_.size(), ValueError, "MaxCalibrator: axis repeats an entry");
}

void MaxCalibrator::collect(const Tensor& x) {
  static const KernelTable<AnyNegativeKernel>& any_negative = kernel_table(kAnyNegativeKernels);
  static const KernelTable<AmaxMergeKernel>& merge = kernel_table(kAmaxMergeKernels);
  const char* op = "MaxCalibrator::collect";
  require_floating(op, "input", x);
  AnyNegativeKernel& negative = any_negative(op, x);
  const auto rank = static_cast<std::int64_t>(x.dim());
  Shape block(x.shape().size(), 0);  // reduced axes: whole axis
  for (std::int64_t a : axis_) {
    QGRAD_CHECK(a >= -rank && a < rank, IndexError, op, ": axis ", a,
                " is out of range for an input of shape ", x.shape());
    block[static_cast<std::size_t>(a < 0 ? a + rank : a)] = 1;  // kept axis: own amax
  }
  const Tensor xc = x.contiguous();
  // any_rank: with a group every rank raises when one rank's data is bad (a no-op without).
  const bool negative_here = unsigned_ && negative(xc);
  QGRAD_CHECK(!any_rank(negative_here), ValueError, op,
              ": calibrator is unsigned but the data has negative values",
              negative_here ? "" : " (on another rank)");
  const BlockLayout L = make_block_layout(x.shape(), block);
  bool nonfinite = false;
  Tensor local = block_absmax(op, xc, L, &nonfinite);
  QGRAD_CHECK(!any_rank(nonfinite), ValueError, op, ": data contains NaN or Inf (shape ", x.shape(),
              ")", nonfinite ? "" : " on another rank");
  if (axis_.empty()) local = local.reshape({});
  reduce_statistic(local, distributed::ReduceOp::Max);  // the global batch's amax
  if (!amax_.defined()) {
    amax_ = local;
    input_shape_ = x.shape();
    return;
  }
  QGRAD_CHECK(local.shape() == amax_.shape(), ShapeError, op, ": amax shape changed from ",
              amax_.shape(), " to ", local.shape(), " (input shape ", x.shape(), ")");
  Tensor merged = amax_.to(x.dtype()).contiguous().clone();
  merge(op, merged)(merged, local);
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
  static const KernelTable<AbsStatsKernel>& stats_table = kernel_table(kAbsStatsKernels);
  static const KernelTable<AbsHistogramKernel>& histogram_table =
      kernel_table(kAbsHistogramKernels);
  const char* op = "HistogramCalibrator::collect";
  require_floating(op, "input", x);
  AbsStatsKernel& abs_stats = stats_table(op, x);
  AbsHistogramKernel& abs_histogram = histogram_table(op, x);
  // The reference bins x.float(): float64 data is rounded to float32 first.
  const Tensor xf = x.detach().to(kFloat32).contiguous();
  AbsStats stats = abs_stats(xf);
  const bool nonfinite_here = stats.nonfinite;
  if (statistics_synced()) {
    // The global batch's max |x|, zero count and non-finite flag, so every rank grows the same
    // edges (and raises the same error).
    std::vector<std::int64_t> counts{stats.zeros, stats.nonfinite ? 1 : 0};
    reduce_sum(counts);
    float lo = 0, hi = static_cast<float>(stats.max);  // exact: the max of float32 values
    reduce_min_max(lo, hi);
    stats.zeros = counts[0];
    stats.nonfinite = counts[1] != 0;
    stats.max = hi;
  }
  QGRAD_CHECK(!stats.nonfinite, ValueError, op, ": data contains NaN or Inf (shape ", x.shape(),
              ")", nonfinite_here || !stats.nonfinite ? "" : " on another rank");
  const auto xmax = static_cast<float>(stats.max);  // exact: the max of float32 values
  if (hist_.edges.empty()) {
    if (xmax == 0) {  // no range yet: keep the zeros for bin 0
      pending_zeros_ += opts_.skip_zeros ? 0 : stats.zeros;
      return;
    }
    hist_.edges = torch_linspace_f32(xmax, opts_.num_bins + 1);
    hist_.counts.assign(static_cast<std::size_t>(opts_.num_bins), 0);
    hist_.counts[0] += pending_zeros_;
    pending_zeros_ = 0;
  } else if (xmax > hist_.edges.back()) {
    // The reference's growth: width, bin count and edges all in float32 tensor arithmetic.
    const float width = hist_.edges[1] - hist_.edges[0];
    QGRAD_CHECK(width > 0, ValueError, op, ": the first batch's max ", hist_.edges.back(),
                " gives a zero bin width; cannot grow the range to ", xmax);
    const auto bins = static_cast<std::int64_t>(std::ceil(xmax / width));
    hist_.edges = torch_arange_f32(static_cast<double>(xmax + width), static_cast<double>(width));
    hist_.counts.resize(std::max(static_cast<std::size_t>(bins), hist_.counts.size()), 0);
  }
  if (!statistics_synced()) {
    abs_histogram(xf, hist_.edges.back(), opts_.skip_zeros, hist_.counts);
    return;
  }
  // This rank's part binned over the agreed edges; the counts summed over the ranks (exact).
  std::vector<std::int64_t> part(hist_.counts.size(), 0);
  abs_histogram(xf, hist_.edges.back(), opts_.skip_zeros, part);
  reduce_sum(part);
  for (std::size_t i = 0; i < part.size(); ++i) hist_.counts[i] += part[i];
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

Tensor HistogramCalibrator::edges() const {
  return from_vector(hist_.edges, {static_cast<std::int64_t>(hist_.edges.size())});
}

Tensor HistogramCalibrator::counts() const {
  return from_vector(hist_.counts, {static_cast<std::int64_t>(hist_.counts.size())});
}

void HistogramCalibrator::reset() {
  hist_ = Histogram{};
  pending_zeros_ = 0;
}

}  // namespace qgrad::nvidia
