// StepStats: per-step training statistics summed on the device, read every few steps.
#include "cli/step_stats.h"

#include <limits>

#include "core/autograd/grad_mode.h"
#include "core/error.h"
#include "core/factory.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"

namespace qgrad::cli {

namespace {
// "No non-finite batch yet": larger than any batch number, exact in double.
constexpr double kNoBatch = 1e15;
}  // namespace

StepStats::StepStats(Device device, std::int64_t read_every)
    : device_(device), read_every_(read_every) {
  QGRAD_CHECK(read_every >= 1, ValueError, "StepStats: read_every must be at least 1, got ",
              read_every);
  reset();
}

void StepStats::reset() {
  const TensorOptions f64 = TensorOptions().dtype(kFloat64).device(device_);
  loss_sum_ = zeros({}, f64);
  correct_ = zeros({}, f64);
  nonfinite_ = zeros({}, f64);
  first_bad_ = full({}, kNoBatch, f64);
  pending_ = 0;
  examples_ = 0;
}

void StepStats::add(const Tensor& loss, const Tensor& logits, const Tensor& target,
                    std::int64_t batch) {
  QGRAD_CHECK(logits.dim() == 2 && target.dim() == 1 && logits.shape()[0] == target.shape()[0],
              ShapeError, "StepStats: expected logits [N, C] and target [N], got ", logits.shape(),
              " and ", target.shape());
  NoGradGuard no_grad;
  const std::int64_t n = target.shape()[0];
  const Tensor l = loss.detach().to(kFloat64).reshape({});
  loss_sum_ = loss_sum_ + l * static_cast<double>(n);
  correct_ = correct_ + sum(eq(argmax(logits.detach(), 1), target)).to(kFloat64);
  // 1 when the loss is nan or +-inf (a comparison with nan is false).
  const Tensor bad = 1.0 - lt(abs(l), std::numeric_limits<double>::infinity()).to(kFloat64);
  nonfinite_ = nonfinite_ + bad;
  // batch where bad, kNoBatch elsewhere, without a branch on the host.
  first_bad_ = minimum(first_bad_, kNoBatch - (kNoBatch - static_cast<double>(batch)) * bad);
  ++pending_;
  examples_ += n;
}

StepStats::Window StepStats::read() {
  Window w;
  w.loss_sum = loss_sum_.item<double>();
  w.correct = static_cast<std::int64_t>(correct_.item<double>());
  w.nonfinite_steps = static_cast<std::int64_t>(nonfinite_.item<double>());
  const double first = first_bad_.item<double>();
  w.first_nonfinite_batch = first < kNoBatch ? static_cast<std::int64_t>(first) : -1;
  w.examples = examples_;
  w.steps = pending_;
  reset();
  return w;
}

}  // namespace qgrad::cli
