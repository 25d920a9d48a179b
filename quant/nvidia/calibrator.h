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
///
/// With a process group (quant/synced_statistics.h) both collect the global batch of the ranks:
/// MaxCalibrator reduces each batch's amax with MAX; HistogramCalibrator reduces the batch's
/// max |x| (MAX) and zero count (SUM) first, so every rank grows the range to the same edges,
/// then sums its part's bin counts (int64, exact). The errors above are agreed between the ranks
/// (every rank raises when one rank's data is bad). Both are the bits of one process collecting
/// the global batch.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "quant/nvidia/histogram_amax.h"
#include "quant/synced_statistics.h"

namespace qgrad::nvidia {

/// Running max |x| over the non-kept axes (see the file comment).
class MaxCalibrator : public quant::SyncedStatistics {
 public:
  /// axis: the axes that keep their own amax (empty: per tensor; a repeat is a ValueError);
  /// is_unsigned: negative data is a ValueError.
  explicit MaxCalibrator(std::vector<std::int64_t> axis = {}, bool is_unsigned = false);
  /// Folds max |x| of a batch into the running amax. IndexError for an axis out of range,
  /// ValueError for NaN / Inf (or negative data when unsigned), ShapeError when the amax shape
  /// changes.
  void collect(const Tensor& x);
  /// The amax: 0-d per tensor, else keepdim-shaped, in the data's dtype; ValueError before any
  /// data.
  Tensor compute_amax() const;
  /// Whether a batch was collected.
  bool has_data() const { return amax_.defined(); }
  void reset();  ///< forgets the collected amax

 private:
  std::vector<std::int64_t> axis_;
  bool unsigned_;
  Tensor amax_;
  Shape input_shape_;
};

/// The options of HistogramCalibrator.
struct HistogramCalibratorOptions {
  int num_bits = 8;              ///< bits of the quantizer the amax is chosen for (1..24)
  bool is_unsigned = false;      ///< whether that quantizer is unsigned
  std::int64_t num_bins = 2048;  ///< histogram bins of the first batch (>= 2)
  bool skip_zeros = false;       ///< leave zeros out of the histogram
};

/// The search options of HistogramCalibrator::compute_amax.
struct HistogramAmaxOptions {
  std::int64_t start_bin = 128;  ///< first candidate bin (entropy, mse)
  std::int64_t stride = 1;       ///< step between candidate bins (entropy, mse)
  double percentile = 99.99;     ///< the percentile of the percentile method, in [0, 100]
};

/// pytorch_quantization's histogram calibrator (per tensor; see the file comment).
class HistogramCalibrator : public quant::SyncedStatistics {
 public:
  /// ValueError when num_bins < 2 or num_bits is unusable.
  explicit HistogramCalibrator(HistogramCalibratorOptions opts = {});
  /// Adds |x| of a batch to the histogram, growing its range as needed; ValueError for NaN / Inf.
  void collect(const Tensor& x);
  /// 0-d float32 amax; method is "entropy", "mse" or "percentile".
  Tensor compute_amax(const std::string& method, const HistogramAmaxOptions& opts = {}) const;
  /// Whether anything was collected.
  bool has_data() const { return !hist_.counts.empty() || pending_zeros_ > 0; }
  /// The histogram so far (empty counts and edges while only zeros were seen).
  const Histogram& histogram() const { return hist_; }
  /// The reference's _calib_bin_edges (float32, 1-D) and _calib_hist (int64, 1-D); empty (shape
  /// {0}) while only zeros were seen.
  Tensor edges() const;
  Tensor counts() const;  ///< the counts (int64, 1-D; see edges())
  void reset();           ///< forgets the histogram

 private:
  HistogramCalibratorOptions opts_;
  Histogram hist_;
  std::int64_t pending_zeros_ = 0;
};

}  // namespace qgrad::nvidia
