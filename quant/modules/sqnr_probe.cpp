// SqnrProbe: signal and quantization-noise sums around a quantizer module.
#include "quant/modules/sqnr_probe.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "core/autograd/grad_mode.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "quant/modules/quantizer_device.h"

namespace qgrad::quant {

SqnrProbe::SqnrProbe(std::shared_ptr<nn::UnaryModule> quantizer) : nn::UnaryModule("SqnrProbe") {
  QGRAD_CHECK(quantizer != nullptr, ValueError, "SqnrProbe: the quantizer must not be null");
  quantizer_ = register_module("quantizer", std::move(quantizer));
}

bool SqnrProbe::runs_on(Device device) const {
  if (device.is_cpu()) return true;
  const auto* q = dynamic_cast<const RunsOn*>(quantizer_.get());
  return q != nullptr && q->runs_on(device);
}

Tensor SqnrProbe::forward(const Tensor& input) {
  if (!runs_on(input.device())) require_cpu_quantizer_input(name(), input);
  Tensor out = quantizer_->forward(input);
  NoGradGuard no_grad;
  const Tensor x = input.to(DType::Float64);
  const Tensor err = x - out.to(DType::Float64);
  signal_ += sum(x * x).item<double>();
  noise_ += sum(err * err).item<double>();
  elements_ += input.numel();
  return out;
}

double SqnrProbe::sqnr_db() const {
  if (elements_ == 0 || signal_ == 0) return std::numeric_limits<double>::quiet_NaN();
  if (noise_ == 0) return std::numeric_limits<double>::infinity();
  return 10 * std::log10(signal_ / noise_);
}

void SqnrProbe::reset() {
  signal_ = noise_ = 0;
  elements_ = 0;
}

std::string SqnrProbe::extra_repr() const {
  char b[96];
  std::snprintf(b, sizeof b, "sqnr_db=%.2f, elements=%lld", sqnr_db(),
                static_cast<long long>(elements_));
  return b;
}

}  // namespace qgrad::quant
