/// @file
/// Calibratable: the interface every quantizer module implements so that a whole model can be
/// calibrated without knowing which quantizer family it uses (calibrate.h). start_calibration()
/// switches the quantizer to gathering statistics with its input passing through unchanged;
/// finish_calibration() fixes the quantization parameters from the statistics and switches it
/// back to quantizing. Each family maps this onto its own modes (NVIDIA: disable_quant +
/// enable_calib, then load_calib_amax; torch.ao: observe without fake quantization; Horizon:
/// CALIBRATION then QAT state; AIMET: a compute_encodings scope).
#pragma once

#include <string>

#include "quant/modules/quantizer_device.h"
#include "quant/nvidia/calibrator.h"

namespace qgrad::quant {

/// How finish_calibration() turns statistics into quantization parameters.
struct CalibrationOptions {
  /// How NVIDIA histogram calibrators choose amax: "entropy", "mse" or "percentile" (max
  /// calibrators always use the running max).
  std::string method = "entropy";
  nvidia::HistogramAmaxOptions histogram;  ///< start_bin, stride, percentile
  /// A quantizer that saw no data during calibration is an error (false: it keeps its previous
  /// parameters).
  bool strict = true;
};

/// The interface of quantizer modules that calibrate_model() drives (see the file comment).
class Calibratable : public RunsOn {
 public:
  virtual ~Calibratable() = default;
  /// Starts gathering statistics; the input passes through unchanged meanwhile.
  virtual void start_calibration() = 0;
  /// Fixes the quantization parameters from the statistics and goes back to quantizing; with
  /// options.strict, a quantizer that saw no data is a ValueError.
  virtual void finish_calibration(const CalibrationOptions& options) = 0;
};

}  // namespace qgrad::quant
