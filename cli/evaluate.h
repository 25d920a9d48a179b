// One evaluation pass: the model in eval mode, without autograd and with its quantizers'
// statistics frozen (quant/modules/frozen_quantizer_statistics.h), over the rest of the current
// epoch of a loader (a whole test set for a fresh epoch), giving the mean cross-entropy loss and
// the accuracy. Shared by `qgrad train` (after every epoch) and `qgrad eval`, which can also run
// the batches through a compiled float inference model (evaluate_forward).
#pragma once

#include <cstdint>
#include <functional>

#include "core/device.h"
#include "distributed/process_group.h"
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

// Leaves the model in eval mode; the caller switches back to train(). With a `group` of N > 1
// ranks, every rank evaluates the batches b of the loader's current epoch with b mod N = its
// rank (every example once, the loader not moved) and the sums are all-reduced: every rank gets
// the result of the whole set.
EvalResult evaluate(nn::UnaryModule& model, data::DataLoader& loader, Device device,
                    distributed::ProcessGroup* group = nullptr);

// The same pass on the CPU, in one process, with `forward` giving each batch's logits (a
// deploy::FloatInferenceModel's forward, say) instead of a module's; autograd is off.
EvalResult evaluate_forward(const std::function<Tensor(const Tensor&)>& forward,
                            data::DataLoader& loader);

}  // namespace qgrad::cli
