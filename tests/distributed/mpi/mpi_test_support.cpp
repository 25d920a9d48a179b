// The helpers of mpi_test_support.h.
#include "mpi_test_support.h"

#include <cmath>
#include <cstring>

#include "core/device.h"
#include "distributed/init.h"
#include "ops/loss/loss.h"

namespace qgrad_test {

std::shared_ptr<qgrad::distributed::ProcessGroup> world() {
  return qgrad::distributed::init_process_group();
}

namespace {
bool same_bytes(const qgrad::Tensor& a, const qgrad::Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const qgrad::Tensor ca = a.to(qgrad::kCPU).contiguous(), cb = b.to(qgrad::kCPU).contiguous();
  const std::size_t bytes = static_cast<std::size_t>(ca.numel()) * ca.element_size();
  return bytes == 0 || std::memcmp(ca.raw_data(), cb.raw_data(), bytes) == 0;
}
}  // namespace

bool same_on_all_ranks(const qgrad::Tensor& t) {
  const std::vector<qgrad::Tensor> all = world()->all_gather(t.to(qgrad::kCPU).contiguous());
  for (const qgrad::Tensor& part : all)
    if (!same_bytes(part, all.front())) return false;
  return true;
}

std::vector<std::string> differing_state(const qgrad::nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& it : m.state_dict())
    if (it.value.defined() && !same_on_all_ranks(it.value)) out.push_back(it.key);
  return out;
}

std::vector<std::string> differing_entries(const qgrad::nn::Module& a, const qgrad::nn::Module& b) {
  std::vector<std::string> out;
  const qgrad::TensorDict sb = b.state_dict();
  for (const auto& it : a.state_dict()) {
    const qgrad::Tensor* other = sb.find(it.key);
    if (other == nullptr || it.value.defined() != other->defined() ||
        (it.value.defined() && !same_bytes(it.value, *other)))
      out.push_back(it.key);
  }
  return out;
}

qgrad::Tensor ranked_step(qgrad::nn::UnaryModule& model,
                          qgrad::distributed::DistributedDataParallel& ddp,
                          qgrad::optim::Optimizer& optimizer, const qgrad::Tensor& x,
                          const qgrad::Tensor& y) {
  qgrad::Tensor loss = qgrad::cross_entropy(model.forward(rank_part(x)), rank_part(y));
  optimizer.zero_grad();
  loss.backward();
  ddp.synchronize();
  optimizer.step();
  return loss;
}

double step_both(qgrad::nn::UnaryModule& ranked, qgrad::distributed::DistributedDataParallel& ddp,
                 qgrad::optim::Optimizer& ranked_optimizer, qgrad::nn::UnaryModule& whole,
                 qgrad::optim::Optimizer& whole_optimizer, const qgrad::Tensor& x,
                 const qgrad::Tensor& y) {
  const qgrad::Tensor loss = ranked_step(ranked, ddp, ranked_optimizer, x, y);
  // The global loss: the mean of the ranks' mean losses (equal shares).
  const double sum = qgrad::distributed::all_reduce_values(*world(), {loss.item<double>()},
                                                           qgrad::distributed::ReduceOp::Sum)[0];
  qgrad::Tensor whole_loss = qgrad::cross_entropy(whole.forward(x), y);
  whole_optimizer.zero_grad();
  whole_loss.backward();
  whole_optimizer.step();
  return std::abs(sum / world()->size() - whole_loss.item<double>());
}

qgrad::Tensor rank_part(const qgrad::Tensor& t) {
  const std::int64_t rows = t.size(0) / world()->size();
  return t.narrow(0, world()->rank() * rows, rows).contiguous();
}

}  // namespace qgrad_test
