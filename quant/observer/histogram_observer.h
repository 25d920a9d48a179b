/// @file
/// torch.ao's HistogramObserver (per tensor) as a plain state class: a running histogram of the
/// observed values (bins = 2048 float32 counts over [min_val, max_val]); a later batch that widens
/// the range re-bins the old histogram by upsampling it (upsample_rate = 128) onto a common grid
/// and integrating it down (PyTorch's _adjust_min_max / _combine_histograms, same arithmetic).
/// calculate_qparams runs PyTorch's non-linear search (an approximate L2 quantization-error
/// minimisation over histogram quantiles, _non_linear_param_search) for a new min/max, then the
/// min/max rule of UniformQuantizationObserver.
/// Difference (documented): PyTorch 1.13 builds each batch's histogram with torch.histc over
/// int(min)..int(max), truncating the range to integers (a bug: values outside are dropped and
/// the bins disagree with min_val / max_val); qgrad uses the real range. Results agree whenever the
/// range ends are integers. The quantization-error sums are accumulated in double (PyTorch sums
/// float32), which can only matter for near-exact ties in the search.
/// With a process group the batch's range is reduced first (min / max), every rank bins its part
/// over that range and the counts are summed: the bits of one process binning the global batch,
/// as long as no bin of one batch reaches 2^24 elements (float32 counts stop growing there).
#pragma once

#include "quant/observer/uniform_observer.h"

namespace qgrad::ao {

/// torch.ao's HistogramObserver (per tensor): a running histogram and PyTorch's non-linear
/// search for the range (see the file comment).
class HistogramObserver : public UniformQuantizationObserver {
 public:
  /// bins and upsample_rate must be >= 1 (ValueError), options as UniformQuantizationObserver's.
  explicit HistogramObserver(std::int64_t bins = 2048, std::int64_t upsample_rate = 128,
                             const ObserverOptions& options = ObserverOptions());

  /// Inputs must be finite (ValueError otherwise).
  Tensor forward(const Tensor& x) override;
  /// The qparams of the range the non-linear search selects ([1.0] / [0] before any data).
  QParams calculate_qparams() const override;
  void reset_min_max_vals() override;  ///< empties the histogram and the range

  /// The number of histogram bins.
  std::int64_t bins() const { return bins_; }
  Tensor& histogram() { return histogram_; }  ///< float32 [bins]
  /// float32 [bins].
  const Tensor& histogram() const { return histogram_; }

  /// The (min, max) the non-linear search selects (exposed for tests and diagnostics).
  std::pair<float, float> non_linear_param_search() const;

 private:
  double quantization_error(std::int64_t start_bin, std::int64_t end_bin) const;
  // A batch's histc counts summed over the ranks (unchanged without a group).
  std::vector<float> global_counts(std::vector<float> counts) const;

  std::int64_t bins_, upsample_rate_;
  double dst_nbins_;
  Tensor histogram_;  ///< min_val_, max_val_ (0-d) are the base's
};

}  // namespace qgrad::ao
