// ProcessGroup's tensor front: checks, host staging of GPU tensors, and the calls into the back
// end's host-buffer collectives.
#include "distributed/process_group.h"

#include <algorithm>
#include <utility>

#include "core/error.h"
#include "core/factory.h"
#include "distributed/host_staging.h"

namespace qgrad::distributed {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Min:
      return "min";
    case ReduceOp::Max:
      return "max";
  }
  return "?";
}

namespace {

void require_contiguous(const char* op, const Tensor& t) {
  QGRAD_CHECK(t.defined(), ValueError, op, ": the tensor is undefined");
  QGRAD_CHECK(t.is_contiguous(), ValueError, op, ": the tensor must be contiguous, got shape ",
              t.shape(), " strides ", t.strides());
}

void require_reducible(const char* op, const Tensor& t) {
  require_contiguous(op, t);
  const DType d = t.dtype();
  QGRAD_CHECK(d == kFloat32 || d == kFloat64 || d == kInt32 || d == kInt64, DTypeError, op,
              ": reduces float32, float64, int32 or int64 tensors, got ", dtype_name(d));
}

// A reduction of a staged GPU tensor: the result goes back to the device when it is complete.
class StagedWork final : public Work {
 public:
  StagedWork(HostStaging staging, std::unique_ptr<Work> inner)
      : staging_(std::move(staging)), inner_(std::move(inner)) {}
  bool test() override {
    if (done_) return true;
    if (!inner_->test()) return false;
    finish();
    return true;
  }
  void wait() override {
    if (done_) return;
    inner_->wait();
    finish();
  }

 private:
  void finish() {
    staging_.copy_back();
    done_ = true;
  }
  HostStaging staging_;
  std::unique_ptr<Work> inner_;
  bool done_ = false;
};

}  // namespace

ProcessGroup::ProcessGroup(int rank, int size) : rank_(rank), size_(size) {
  QGRAD_CHECK(size >= 1 && rank >= 0 && rank < size, ValueError, "ProcessGroup: rank ", rank,
              " of ", size, " ranks");
}

void ProcessGroup::all_reduce(Tensor& t, ReduceOp op) {
  all_reduce_async(t, op)->wait();
}

std::unique_ptr<Work> ProcessGroup::all_reduce_async(const Tensor& t, ReduceOp op) {
  require_reducible("all_reduce", t);
  if (!t.device().is_cpu())
    if (std::unique_ptr<Work> direct = start_device_all_reduce(t, op)) return direct;
  HostStaging staging(t, /*copy_in=*/true);
  void* data = staging.data();
  std::unique_ptr<Work> inner = start_all_reduce(data, t.numel(), t.dtype(), op);
  return std::make_unique<StagedWork>(std::move(staging), std::move(inner));
}

void ProcessGroup::broadcast(Tensor& t, int root) {
  require_contiguous("broadcast", t);
  QGRAD_CHECK(root >= 0 && root < size_, ValueError, "broadcast: root ", root, " is not a rank of ",
              size_);
  HostStaging staging(t, /*copy_in=*/rank_ == root);
  broadcast_bytes(staging.data(), staging.bytes(), root);
  if (rank_ != root) staging.copy_back();
}

std::vector<Tensor> ProcessGroup::all_gather(const Tensor& t) {
  require_contiguous("all_gather", t);
  HostStaging staging(t, /*copy_in=*/true);
  Tensor all =
      empty(Shape{static_cast<std::int64_t>(size_) * t.numel()}, TensorOptions().dtype(t.dtype()));
  all_gather_bytes(staging.data(), all.raw_data(), staging.bytes());
  std::vector<Tensor> out;
  out.reserve(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    Tensor part =
        all.narrow(0, static_cast<std::int64_t>(r) * t.numel(), t.numel()).view(t.shape());
    out.push_back(t.device().is_cpu() ? part.clone() : part.to(t.device()));
  }
  return out;
}

void ProcessGroup::barrier() {
  barrier_impl();
}

std::vector<double> all_reduce_values(ProcessGroup& group, std::vector<double> values,
                                      ReduceOp op) {
  if (values.empty()) return values;
  Tensor t = from_vector<double>(values);
  group.all_reduce(t, op);
  return t.to_vector<double>();
}

std::string broadcast_string(ProcessGroup& group, const std::string& text, int root) {
  Tensor size = from_vector<std::int64_t>({static_cast<std::int64_t>(text.size())});
  group.broadcast(size, root);
  Tensor bytes = zeros({size.item<std::int64_t>()}, TensorOptions().dtype(kUInt8));
  if (group.rank() == root && !text.empty())
    std::copy(text.begin(), text.end(), bytes.data_ptr<std::uint8_t>());
  group.broadcast(bytes, root);
  const auto* p = bytes.data_ptr<std::uint8_t>();
  return std::string(p, p + bytes.numel());
}

}  // namespace qgrad::distributed
