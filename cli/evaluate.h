// One evaluation pass: the model in eval mode, without autograd and with its quantizers'
// statistics frozen (quant/modules/frozen_quantizer_statistics.h), over the rest of the current
// epoch of a loader (a whole test set for a fresh epoch), giving the mean cross-entropy loss and
// the accuracy. Shared by `qgrad train` (after every epoch) and `qgrad eval`.
#pragma once

#include <cstdint>

#include "core/device.h"
#include "nn/data/dataloader.h"
#include "nn/unary_module.h"

namespace qgrad::cli {

struct EvalResult {
  double loss = 0;      // mean over the examples
  double accuracy = 0;  // fraction
  std::int64_t correct = 0;
  std::int64_t count = 0;
  double time_s = 0;
};

// Number of rows of `logits` [N, C] whose argmax equals `target` [N] (int64).
std::int64_t count_correct(const Tensor& logits, const Tensor& target);

// Leaves the model in eval mode; the caller switches back to train().
EvalResult evaluate(nn::UnaryModule& model, data::DataLoader& loader, Device device);

}  // namespace qgrad::cli
