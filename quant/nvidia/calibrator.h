// Calibrators of the NVIDIA family, collecting statistics batch by batch to choose amax.
//
// MaxCalibrator: running max |x| over the non-kept axes (axis = the axes that keep their own
// amax, empty = per tensor). compute_amax() is 0-d per tensor, else keepdim-shaped ([C,1,1,1] for
// axis {0} of a KCRS weight), in the dtype of the data.
//
// HistogramCalibrator (per tensor): histogram of |x| from 0 with num_bins bins of width
// max|x| / num_bins set by the first batch with a non-zero max; a later batch with a larger max
// grows the histogram with more bins of the same width (ceil(max / width) bins). Counts are int64
// (the reference's float32 counts stop at 2^24 per bin). Zeros seen before any non-zero value are
// kept and land in bin 0. compute_amax("entropy" | "mse" | "percentile") runs the searches of
// histogram_amax.h with the calibrator's num_bits and unsigned.
//
// Both reject non-finite data (ValueError: a calibration batch with NaN or Inf would silently give
// a meaningless amax) and raise ValueError from compute_amax when nothing was collected (the
// reference returns None and later produces NaN). MaxCalibrator with unsigned rejects negative
// data, as the reference does; the histogram calibrator works on |x| either way.
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
  // 0-d float32 amax; method is "entropy", "mse" or "percentile".
  Tensor compute_amax(const std::string& method, const HistogramAmaxOptions& opts = {}) const;
  bool has_data() const { return !hist_.counts.empty() || pending_zeros_ > 0; }
  // The histogram so far (empty counts while only zeros were seen).
  const Histogram& histogram() const { return hist_; }
  void reset();

 private:
  HistogramCalibratorOptions opts_;
  Histogram hist_;
  std::int64_t pending_zeros_ = 0;
};

}  // namespace qgrad::nvidia
