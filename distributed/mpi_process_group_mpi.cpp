// The MPI back end (see mpi_process_group.h). Compiled only in builds with MPI (the build leaves
// out *_mpi.cpp otherwise).
#include <mpi.h>

#include <climits>
#include <cmath>
#include <exception>
#include <string>
#include <vector>

#include "core/error.h"
#include "distributed/mpi_process_group.h"

#ifdef QGRAD_WITH_NCCL
#include "distributed/nccl_communicator.h"
#endif

namespace qgrad::distributed {

namespace {

[[noreturn]] void throw_mpi(int code, const char* call) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  throw Error(std::string("distributed (mpi): ") + call + " failed: " + std::string(text, len));
}

void check(int code, const char* call) {
  if (code != MPI_SUCCESS) throw_mpi(code, call);
}

// torch.min / torch.max of two values, element by element: NaN wins. Commutative, so every rank
// gets the same bits whatever order MPI combines them in.
template <typename T, bool kMax>
void nan_extreme(const T* in, T* inout, int n) {
  for (int i = 0; i < n; ++i) {
    const T a = in[i], b = inout[i];
    if (std::isnan(a) || std::isnan(b))
      inout[i] = std::isnan(a) ? a : b;
    else
      inout[i] = kMax ? (a > b ? a : b) : (a < b ? a : b);
  }
}

template <bool kMax>
void nan_extreme_op(void* in, void* inout, int* len, MPI_Datatype* type) {
  if (*type == MPI_FLOAT)
    nan_extreme<float, kMax>(static_cast<const float*>(in), static_cast<float*>(inout), *len);
  else
    nan_extreme<double, kMax>(static_cast<const double*>(in), static_cast<double*>(inout), *len);
}

MPI_Datatype mpi_type(DType d) {
  switch (d) {
    case DType::Float32:
      return MPI_FLOAT;
    case DType::Float64:
      return MPI_DOUBLE;
    case DType::Int32:
      return MPI_INT32_T;
    case DType::Int64:
      return MPI_INT64_T;
    default:
      throw DTypeError(std::string("distributed (mpi): no reduction for ") + dtype_name(d));
  }
}

class MpiWork final : public Work {
 public:
  std::vector<MPI_Request> requests;
  bool test() override {
    if (requests.empty()) return true;
    int flag = 0;
    check(
        MPI_Testall(static_cast<int>(requests.size()), requests.data(), &flag, MPI_STATUSES_IGNORE),
        "MPI_Testall");
    if (flag) requests.clear();
    return flag != 0;
  }
  void wait() override {
    if (requests.empty()) return;
    check(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE),
          "MPI_Waitall");
    requests.clear();
  }
  ~MpiWork() override {
    // A collective may not be abandoned (its buffer would be written later): finish it, unless
    // the rank is failing anyway.
    if (!requests.empty() && std::uncaught_exceptions() == 0)
      MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  }
};

// The largest count one MPI call takes; longer buffers go in pieces.
constexpr std::int64_t kChunk = INT_MAX / 8;

class MpiProcessGroup final : public ProcessGroup {
 public:
  MpiProcessGroup(int rank, int size, bool owns_mpi, bool nccl)
      : ProcessGroup(rank, size), owns_mpi_(owns_mpi), nccl_(nccl) {
    check(MPI_Op_create(&nan_extreme_op<false>, 1, &nan_min_), "MPI_Op_create");
    check(MPI_Op_create(&nan_extreme_op<true>, 1, &nan_max_), "MPI_Op_create");
  }
  ~MpiProcessGroup() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
#ifdef QGRAD_WITH_NCCL
    communicators_.clear();  // before MPI goes
#endif
    MPI_Op_free(&nan_min_);
    MPI_Op_free(&nan_max_);
    // While an exception unwinds this rank is failing: MPI_Finalize would wait for ranks that
    // wait for this one. abort_job ends them all instead.
    if (owns_mpi_ && std::uncaught_exceptions() == 0) MPI_Finalize();
  }
  std::string backend() const override {
    return nccl_ ? "mpi+nccl" : "mpi";
  }

 protected:
#ifdef QGRAD_WITH_NCCL
  std::unique_ptr<Work> start_device_all_reduce(const Tensor& t, ReduceOp op) override {
    if (!nccl_ || op != ReduceOp::Sum) return nullptr;
    const int device = t.device().index;
    auto it = communicators_.begin();
    while (it != communicators_.end() && (*it)->device() != device) ++it;
    if (it == communicators_.end()) {
      // Collective: every rank reaches its first GPU sum at the same point.
      std::vector<char> id = rank() == 0 ? NcclCommunicator::make_unique_id() : std::vector<char>();
      int n = static_cast<int>(id.size());
      check(MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
      id.resize(static_cast<std::size_t>(n));
      check(MPI_Bcast(id.data(), n, MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
      communicators_.push_back(std::make_unique<NcclCommunicator>(id, rank(), size(), device));
      it = communicators_.end() - 1;
    }
    (*it)->all_reduce_sum(t.raw_data(), t.numel(), t.dtype());
    // Queued on the device's stream: what reads the tensor later on that stream sees the sum.
    return std::make_unique<MpiWork>();
  }
#endif
  std::unique_ptr<Work> start_all_reduce(void* data, std::int64_t count, DType dtype,
                                         ReduceOp op) override {
    const MPI_Datatype type = mpi_type(dtype);
    const bool floating = dtype == DType::Float32 || dtype == DType::Float64;
    MPI_Op mop = MPI_SUM;
    if (op == ReduceOp::Min) mop = floating ? nan_min_ : MPI_MIN;
    if (op == ReduceOp::Max) mop = floating ? nan_max_ : MPI_MAX;
    auto work = std::make_unique<MpiWork>();
    const std::size_t elem = dtype_size(dtype);
    for (std::int64_t at = 0; at < count; at += kChunk) {
      const int n = static_cast<int>(std::min(kChunk, count - at));
      MPI_Request r;
      check(MPI_Iallreduce(MPI_IN_PLACE, static_cast<char*>(data) + at * elem, n, type, mop,
                           MPI_COMM_WORLD, &r),
            "MPI_Iallreduce");
      work->requests.push_back(r);
    }
    return work;
  }
  void broadcast_bytes(void* data, std::size_t bytes, int root) override {
    for (std::size_t at = 0; at < bytes; at += kChunk) {
      const int n = static_cast<int>(std::min<std::size_t>(kChunk, bytes - at));
      check(MPI_Bcast(static_cast<char*>(data) + at, n, MPI_BYTE, root, MPI_COMM_WORLD),
            "MPI_Bcast");
    }
  }
  void all_gather_bytes(const void* in, void* out, std::size_t bytes) override {
    QGRAD_CHECK(bytes <= static_cast<std::size_t>(kChunk), ValueError, "all_gather: at most ",
                kChunk, " bytes per rank, got ", bytes);
    check(MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes),
                        MPI_BYTE, MPI_COMM_WORLD),
          "MPI_Allgather");
  }
  void barrier_impl() override {
    check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  }

 private:
  bool owns_mpi_;
  bool nccl_;
#ifdef QGRAD_WITH_NCCL
  std::vector<std::unique_ptr<NcclCommunicator>> communicators_;
#endif
  MPI_Op nan_min_ = MPI_OP_NULL, nan_max_ = MPI_OP_NULL;
};

}  // namespace

std::shared_ptr<ProcessGroup> make_mpi_world(bool nccl) {
#ifndef QGRAD_WITH_NCCL
  QGRAD_CHECK(!nccl, Error,
              "distributed: the NCCL back end was asked for but this qgrad was built without NCCL "
              "(QGRAD_NCCL needs CUDA, MPI and nccl.h / libnccl); use \"mpi\", which stages GPU "
              "tensors through host memory");
#endif
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  QGRAD_CHECK(!finalized, Error,
              "distributed: MPI was finalised already (a process joins its job once)");
  bool owns = false;
  if (!initialized) {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    owns = true;
    QGRAD_CHECK(provided >= MPI_THREAD_FUNNELED, Error,
                "distributed (mpi): the MPI library does not support MPI_THREAD_FUNNELED");
  }
  int rank = 0, size = 1;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  return std::make_shared<MpiProcessGroup>(rank, size, owns, nccl);
}

void mpi_abort_if_running(int code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
}

}  // namespace qgrad::distributed
