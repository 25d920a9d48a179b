// StepStats: the training loop's per-step statistics (the summed loss, correct predictions,
// non-finite losses) accumulated on the training device and read by the host only every
// `read_every` steps. On a GPU each host read waits for the device to finish and leaves it idle
// while the host queues the next step, so the trainer reads every 32 steps there; on the CPU a
// read costs nothing and it reads every step, so divergence is reported at the exact batch.
#pragma once

#include <cstdint>

#include "core/device.h"
#include "core/tensor.h"

namespace qgrad::cli {

class StepStats {
 public:
  StepStats(Device device, std::int64_t read_every);

  // Adds one step: its mean loss (0-d), the logits [N, C] and targets [N], and the step's batch
  // number in its epoch (0-based). Queues device work only.
  void add(const Tensor& loss, const Tensor& logits, const Tensor& target, std::int64_t batch);
  // Whether the pending steps should be read now (read_every of them are pending).
  bool due() const { return pending_ >= read_every_; }
  bool empty() const { return pending_ == 0; }

  // What the steps added since the last read sum to; reading waits for the device.
  struct Window {
    double loss_sum = 0;  // sum of per-example losses (nan or inf once a step's loss was)
    std::int64_t correct = 0;
    std::int64_t examples = 0;
    std::int64_t steps = 0;
    std::int64_t nonfinite_steps = 0;
    std::int64_t first_nonfinite_batch = -1;  // the batch number of the first, or -1
  };
  Window read();

 private:
  Device device_;
  std::int64_t read_every_;
  std::int64_t pending_ = 0, examples_ = 0;
  // 0-d float64 on the device: loss sum, correct count, non-finite count, first bad batch.
  Tensor loss_sum_, correct_, nonfinite_, first_bad_;
  void reset();
};

}  // namespace qgrad::cli
