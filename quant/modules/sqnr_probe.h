// SqnrProbe: a quantizer module wrapped so that every forward pass also accumulates the signal
// and the quantization noise of its output, sum x^2 and sum (x - q(x))^2 in double, giving the
// signal-to-quantization-noise ratio 10 log10(signal / noise) in dB over all the batches seen
// (`qgrad sensitivity`). It computes exactly what the wrapped quantizer computes; the quantizer
// stays its child "quantizer", so calibration and FrozenQuantizerStatistics still find it.
// Put it in a layer's place with Module::replace_module("_input_quantizer", probe).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "nn/unary_module.h"
#include "quant/modules/quantizer_device.h"

namespace qgrad::quant {

class SqnrProbe : public nn::UnaryModule, public RunsOn {
 public:
  // ValueError for a null quantizer.
  explicit SqnrProbe(std::shared_ptr<nn::UnaryModule> quantizer);

  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  /// Where its quantizer runs (the sums are ops, read on the host after each batch).
  bool runs_on(Device device) const override;

  // +inf when no noise was seen (every value on the grid), NaN before any forward pass or when
  // the signal is zero.
  double sqnr_db() const;
  double signal() const { return signal_; }
  double noise() const { return noise_; }
  std::int64_t elements() const { return elements_; }
  void reset();
  const std::shared_ptr<nn::UnaryModule>& quantizer() const { return quantizer_; }

 private:
  std::shared_ptr<nn::UnaryModule> quantizer_;
  double signal_ = 0, noise_ = 0;
  std::int64_t elements_ = 0;
};

}  // namespace qgrad::quant
