// DistributedDataParallel: gradient buckets filled by accumulation hooks, all-reduced while
// backward runs, averaged into .grad() by synchronize(); buffers broadcast from rank 0.
#include "distributed/data_parallel.h"

#include <chrono>
#include <utility>

#include "core/autograd/grad_mode.h"
#include "core/error.h"
#include "core/factory.h"
#include "ops/binary/binary.h"

namespace qgrad::distributed {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Broadcasts `tensors` from `root`, one flat buffer per (dtype, device) in first-seen order.
void broadcast_flat(ProcessGroup& group, const std::vector<Tensor>& tensors, int root) {
  std::vector<std::pair<std::pair<DType, std::string>, std::vector<Tensor>>> groups;
  for (const Tensor& t : tensors) {
    if (!t.defined() || t.numel() == 0) continue;
    const auto key = std::make_pair(t.dtype(), t.device().str());
    auto it = groups.begin();
    while (it != groups.end() && it->first != key) ++it;
    if (it == groups.end()) it = groups.insert(groups.end(), {key, {}});
    it->second.push_back(t);
  }
  for (auto& [key, members] : groups) {
    std::int64_t total = 0;
    for (const Tensor& t : members) total += t.numel();
    Tensor flat =
        empty(Shape{total}, TensorOptions().dtype(key.first).device(members.front().device()));
    std::int64_t at = 0;
    for (const Tensor& t : members) {
      flat.narrow(0, at, t.numel()).copy_(t.reshape(Shape{t.numel()}));
      at += t.numel();
    }
    group.broadcast(flat, root);
    at = 0;
    for (const Tensor& t : members) {
      Tensor dst = t;
      dst.copy_(flat.narrow(0, at, t.numel()).view(t.shape()));
      at += t.numel();
    }
  }
}

}  // namespace

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> module,
                                                 std::shared_ptr<ProcessGroup> group,
                                                 DataParallelOptions options)
    : module_(std::move(module)), group_(std::move(group)), options_(options) {
  QGRAD_CHECK(module_ != nullptr, ValueError, "DistributedDataParallel: module is null");
  QGRAD_CHECK(group_ != nullptr, ValueError, "DistributedDataParallel: process group is null");
  QGRAD_CHECK(options_.bucket_cap_mb > 0, ValueError,
              "DistributedDataParallel: bucket_cap_mb must be positive, got ",
              options_.bucket_cap_mb);
  if (group_->size() == 1) return;  // one rank: nothing to reduce, no hooks
  NoGradGuard no_grad;
  broadcast_state(/*parameters=*/true);
  build_buckets();
}

DistributedDataParallel::~DistributedDataParallel() {
  remove_hooks();
}

std::vector<Tensor> DistributedDataParallel::current_parameters() const {
  std::vector<Tensor> out;
  for (const Tensor& p : module_->parameters())
    if (p.requires_grad()) out.push_back(p);
  return out;
}

void DistributedDataParallel::remove_hooks() {
  for (Entry& e : entries_) e.param.remove_post_accumulate_grad_hook(e.hook);
}

void DistributedDataParallel::build_buckets() {
  remove_hooks();
  for (Bucket& b : buckets_)
    if (b.work) b.work->wait();
  entries_.clear();
  buckets_.clear();
  next_launch_ = 0;
  const std::vector<Tensor> params = current_parameters();
  const auto cap = static_cast<std::int64_t>(options_.bucket_cap_mb * 1024 * 1024);
  std::int64_t bytes = 0;
  // Reverse registration order: the last layers' gradients come first in backward.
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    const Tensor& p = *it;
    const bool fresh = buckets_.empty() || bytes >= cap ||
                       entries_[buckets_.back().entries.front()].param.dtype() != p.dtype() ||
                       entries_[buckets_.back().entries.front()].param.device() != p.device();
    if (fresh) {
      buckets_.emplace_back();
      bytes = 0;
    }
    Bucket& b = buckets_.back();
    Entry e;
    e.param = p;
    e.bucket = buckets_.size() - 1;
    e.offset = b.numel;
    e.flag = static_cast<std::int64_t>(b.entries.size());
    b.numel += p.numel();
    bytes += p.numel() * static_cast<std::int64_t>(p.element_size());
    b.entries.push_back(entries_.size());
    entries_.push_back(std::move(e));
  }
  for (Bucket& b : buckets_) {
    const Tensor& first = entries_[b.entries.front()].param;
    b.flat = zeros(Shape{b.numel + static_cast<std::int64_t>(b.entries.size())},
                   TensorOptions().dtype(first.dtype()).device(first.device()));
    b.pending = b.entries.size();
  }
  for (std::size_t i = 0; i < entries_.size(); ++i)
    entries_[i].hook = entries_[i].param.register_post_accumulate_grad_hook(
        [this, i](const Tensor&) { on_gradient(i); });
}

void DistributedDataParallel::stage(std::size_t i) {
  Entry& e = entries_[i];
  Bucket& b = buckets_[e.bucket];
  const Tensor g = e.param.grad();
  Tensor slot = b.flat.narrow(0, e.offset, e.param.numel());
  Tensor flag = b.flat.narrow(0, b.numel + e.flag, 1);
  if (g.defined()) {
    slot.copy_(g.reshape(Shape{g.numel()}));
    flag.fill_(1);
  } else {
    slot.zero_();
    flag.zero_();
  }
  if (!e.arrived) {
    e.arrived = true;
    --b.pending;
  }
}

void DistributedDataParallel::on_gradient(std::size_t i) {
  if (!sync_) return;
  Entry& e = entries_[i];
  QGRAD_CHECK(!buckets_[e.bucket].work, AutogradError,
              "DistributedDataParallel: a gradient arrived after its bucket's all-reduce had "
              "started: backward ran twice before synchronize() (for gradient accumulation, "
              "turn the reduction off with set_sync(false) for all but the last backward)");
  NoGradGuard no_grad;
  stage(i);
  if (buckets_[e.bucket].pending == 0) launch_ready(/*from_hook=*/true);
  // MPI moves non-blocking collectives on inside its calls: give the started ones a turn.
  for (std::size_t b = 0; b < next_launch_; ++b) buckets_[b].work->test();
}

void DistributedDataParallel::launch_ready(bool from_hook) {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
    Bucket& b = buckets_[next_launch_];
    b.work = group_->all_reduce_async(b.flat, ReduceOp::Sum);
    ++stats_.all_reduces;
    if (from_hook) ++stats_.started_early;
    ++next_launch_;
  }
}

void DistributedDataParallel::synchronize() {
  if (group_->size() == 1 || !sync_) return;
  NoGradGuard no_grad;
  const std::vector<Tensor> params = current_parameters();
  bool same = params.size() == entries_.size();
  for (std::size_t i = 0; same && i < params.size(); ++i)
    same = params[params.size() - 1 - i].is_same(entries_[i].param);
  if (!same) build_buckets();  // parameters appeared (or were replaced) since the last step
  for (std::size_t b = next_launch_; b < buckets_.size(); ++b)
    for (std::size_t i : buckets_[b].entries)
      if (!entries_[i].arrived) stage(i);
  launch_ready(/*from_hook=*/false);
  const auto start = std::chrono::steady_clock::now();
  for (Bucket& b : buckets_) b.work->wait();
  stats_.wait_s += seconds_since(start);
  const double n = group_->size();
  for (Bucket& b : buckets_) {
    const std::vector<double> flags =
        b.flat.narrow(0, b.numel, static_cast<std::int64_t>(b.entries.size())).to_vector<double>();
    const Tensor mean = div(b.flat.narrow(0, 0, b.numel), n);
    for (std::size_t k = 0; k < b.entries.size(); ++k) {
      Entry& e = entries_[b.entries[k]];
      e.arrived = false;
      if (flags[k] == 0) {
        e.param.set_grad(Tensor());
        continue;
      }
      const Tensor avg = mean.narrow(0, e.offset, e.param.numel()).view(e.param.shape());
      Tensor g = e.param.grad();
      if (g.defined() && g.is_contiguous() && g.dtype() == avg.dtype())
        g.copy_(avg);
      else
        e.param.set_grad(avg.clone());
    }
    b.pending = b.entries.size();
    b.work.reset();
  }
  next_launch_ = 0;
  ++stats_.steps;
  if (options_.broadcast_buffers) {
    const auto t = std::chrono::steady_clock::now();
    broadcast_state(/*parameters=*/false);
    stats_.broadcast_s += seconds_since(t);
  }
}

void DistributedDataParallel::broadcast_state(bool parameters) {
  std::vector<Tensor> tensors;
  if (parameters)
    for (const Tensor& p : module_->parameters()) tensors.push_back(p);
  for (const Tensor& b : module_->buffers()) tensors.push_back(b);
  broadcast_flat(*group_, tensors, 0);
}

}  // namespace qgrad::distributed
