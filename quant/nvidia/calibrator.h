/// @file
/// Calibrators of the NVIDIA family, collecting statistics batch by batch to choose amax.
///
/// MaxCalibrator: running max |x| over the non-kept axes (axis = the axes that keep their own
/// amax, empty = per tensor). compute_amax() is 0-d per tensor, else keepdim-shaped ([C,1,1,1] for
/// axis {0} of a KCRS weight), in the dtype of the data.
///
/// HistogramCalibrator (per tensor): pytorch_quantization's torch_hist collector, bit for bit with
/// its PyTorch 1.13 CPU run. |x| in float32 (the reference's x.float()). The first batch with a
/// non-zero max m sets edges = torch.linspace(0, m, num_bins + 1) and counts =
/// torch.histc(|x|, num_bins, 0, m). A later batch with max m' > edges.back() grows the range: with
/// the float32 width w = edges[1] - edges[0], bins = ceil(float32(m' / w)) and edges =
/// torch.arange(0, float32(m' + w), w); every batch is then binned by histc over [0, edges.back()]
/// with counts.size() bins and added to the old counts bin by bin (histogram_amax.h reproduces
/// the three ops' float32 arithmetic). Counts are int64: the reference's float32 counts stop
/// growing at 2^24 per bin (its += of 1.0f is lost there), qgrad's do not.
/// compute_amax("entropy" | "mse" | "percentile") runs the searches of histogram_amax.h with the
/// calibrator's num_bits and unsigned; edges() and counts() return the state as tensors.
///
/// Where qgrad deliberately differs from the reference: zeros seen before any non-zero value are
/// kept and land in bin 0 (the reference's histc puts an all-zero first batch in bin num_bins/2
/// of [-1, 1] with all-zero edges and then fails on the next growth); an all-zero batch with
/// skip_zeros adds nothing (the reference raises: max() of an empty tensor).
///
/// Both calibrators reject non-finite data (ValueError: a calibration batch with NaN or Inf would
/// silently give a meaningless amax; the reference raises on NaN/Inf in its first batch and on Inf
/// later, but silently drops a later batch's NaN elements, and, its max being NaN, does not grow
/// the range for that batch) and raise ValueError from compute_amax when nothing was collected
/// (the reference returns None and later produces NaN). MaxCalibrator with unsigned rejects
/// negative data, as the reference does; the histogram calibrator works on |x| either way.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "quant/nvidia/histogram_amax.h"

namespace qgrad::nvidia {

class MaxCalibrator {
 public:
  explicit MaxCalibrator(std::vector<std::int64_t> axis = {}, bool is_unsigned = false);
  void collect(const Tensor& x);
  Tensor compute_amax() const;
  bool has_data() const { return amax_.defined(); }
  void reset();

 private:
  std::vector<std::int64_t> axis_;
  bool unsigned_;
  Tensor amax_;
  Shape input_shape_;
};

struct HistogramCalibratorOptions {
  int num_bits = 8;
  bool is_unsigned = false;
  std::int64_t num_bins = 2048;
  bool skip_zeros = false;
};

struct HistogramAmaxOptions {
  std::int64_t start_bin = 128;
  std::int64_t stride = 1;
  double percentile = 99.99;
};

class HistogramCalibrator {
 public:
  explicit HistogramCalibrator(HistogramCalibratorOptions opts = {});
  void collect(const Tensor& x);
  /// 0-d float32 amax; method is "entropy", "mse" or "percentile".
  Tensor compute_amax(const std::string& method, const HistogramAmaxOptions& opts = {}) const;
  bool has_data() const { return !hist_.counts.empty() || pending_zeros_ > 0; }
  /// The histogram so far (empty counts and edges while only zeros were seen).
  const Histogram& histogram() const { return hist_; }
  /// The reference's _calib_bin_edges (float32, 1-D) and _calib_hist (int64, 1-D); empty (shape
  /// {0}) while only zeros were seen.
  Tensor edges() const;
  Tensor counts() const;
  void reset();

 private:
  HistogramCalibratorOptions opts_;
  Histogram hist_;
  std::int64_t pending_zeros_ = 0;
};

}  // namespace qgrad::nvidia
