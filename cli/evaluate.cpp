// Evaluation pass: summed loss and argmax hits over the batches.
#include "cli/evaluate.h"

#include <chrono>

#include "core/autograd/grad_mode.h"
#include "core/error.h"
#include "ops/loss/loss.h"
#include "ops/reduce/reduce.h"
#include "quant/modules/frozen_quantizer_statistics.h"

namespace qgrad::cli {

std::int64_t count_correct(const Tensor& logits, const Tensor& target) {
  QGRAD_CHECK(logits.dim() == 2 && target.dim() == 1 && logits.shape()[0] == target.shape()[0],
              ShapeError, "count_correct: expected logits [N, C] and target [N], got ",
              logits.shape(), " and ", target.shape());
  const std::vector<std::int64_t> pred = argmax(logits, 1).to_vector<std::int64_t>();
  const std::vector<std::int64_t> truth = target.to_vector<std::int64_t>();
  std::int64_t n = 0;
  for (std::size_t i = 0; i < pred.size(); ++i) n += pred[i] == truth[i];
  return n;
}

namespace {

// The pass over the loader with `forward` giving the logits (autograd off by the caller).
EvalResult evaluate_batches(const std::function<Tensor(const Tensor&)>& forward,
                            data::DataLoader& loader, Device device,
                            distributed::ProcessGroup* group) {
  const auto start = std::chrono::steady_clock::now();
  EvalResult r;
  double loss_sum = 0;
  auto add = [&](const data::Batch& b) {
    Tensor x = b.data.to(device), t = b.target.to(device);
    Tensor logits = forward(x);
    const std::int64_t n = t.shape()[0];
    loss_sum += cross_entropy(logits, t, CrossEntropyOptions().reduction("sum")).item<double>();
    r.correct += count_correct(logits, t);
    r.count += n;
  };
  if (group != nullptr && group->size() > 1) {
    const data::LoaderState at = loader.state();
    for (std::int64_t b = at.batch + group->rank(); b < loader.batches_per_epoch();
         b += group->size())
      add(loader.make_batch({at.epoch, b}));
    // Counts are exact in float64; the loss sums add in rank order.
    const std::vector<double> v = distributed::all_reduce_values(
        *group, {loss_sum, static_cast<double>(r.correct), static_cast<double>(r.count)},
        distributed::ReduceOp::Sum);
    loss_sum = v[0];
    r.correct = static_cast<std::int64_t>(v[1]);
    r.count = static_cast<std::int64_t>(v[2]);
  } else {
    while (std::optional<data::Batch> b = loader.next()) add(*b);
  }
  if (r.count > 0) {
    r.loss = loss_sum / static_cast<double>(r.count);
    r.accuracy = static_cast<double>(r.correct) / static_cast<double>(r.count);
  }
  r.time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace

EvalResult evaluate(nn::UnaryModule& model, data::DataLoader& loader, Device device,
                    distributed::ProcessGroup* group) {
  NoGradGuard no_grad;
  model.eval();
  quant::FrozenQuantizerStatistics frozen(model);
  return evaluate_batches([&](const Tensor& x) { return model.forward(x); }, loader, device, group);
}

EvalResult evaluate_forward(const std::function<Tensor(const Tensor&)>& forward,
                            data::DataLoader& loader) {
  NoGradGuard no_grad;
  return evaluate_batches(forward, loader, Device(), nullptr);
}

}  // namespace qgrad::cli
