// NcclCommunicator on NCCL (builds with QGRAD_WITH_NCCL). Compiled, never run: no machine with
// two GPUs has been available (see docs/distributed.md).
#include <nccl.h>

#include <cstring>
#include <string>

#include "core/cuda_stream.h"
#include "core/error.h"
#include "distributed/nccl_communicator.h"

namespace qgrad::distributed {

namespace {

void check(ncclResult_t r, const char* call) {
  if (r != ncclSuccess)
    throw Error(std::string("distributed (nccl): ") + call + " failed: " + ncclGetErrorString(r));
}

ncclDataType_t nccl_type(DType d) {
  switch (d) {
    case DType::Float32:
      return ncclFloat32;
    case DType::Float64:
      return ncclFloat64;
    case DType::Int32:
      return ncclInt32;
    case DType::Int64:
      return ncclInt64;
    default:
      throw DTypeError(std::string("distributed (nccl): no reduction for ") + dtype_name(d));
  }
}

}  // namespace

struct NcclCommunicator::Impl {
  ncclComm_t comm = nullptr;
};

std::vector<char> NcclCommunicator::make_unique_id() {
  ncclUniqueId id;
  check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  std::vector<char> bytes(sizeof id.internal);
  std::memcpy(bytes.data(), id.internal, sizeof id.internal);
  return bytes;
}

NcclCommunicator::NcclCommunicator(const std::vector<char>& unique_id, int rank, int size,
                                   int device)
    : impl_(std::make_unique<Impl>()), device_(device) {
  ncclUniqueId id;
  QGRAD_CHECK(unique_id.size() == sizeof id.internal, ValueError,
              "distributed (nccl): a unique id has ", sizeof id.internal, " bytes, got ",
              unique_id.size());
  std::memcpy(id.internal, unique_id.data(), sizeof id.internal);
  CudaDeviceGuard guard(device);
  check(ncclCommInitRank(&impl_->comm, size, id, rank), "ncclCommInitRank");
}

NcclCommunicator::~NcclCommunicator() {
  if (impl_->comm != nullptr) ncclCommDestroy(impl_->comm);
}

void NcclCommunicator::all_reduce_sum(void* data, std::int64_t count, DType dtype) {
  CudaDeviceGuard guard(device_);
  check(ncclAllReduce(data, data, static_cast<std::size_t>(count), nccl_type(dtype), ncclSum,
                      impl_->comm, cuda_stream(device_)),
        "ncclAllReduce");
}

}  // namespace qgrad::distributed
