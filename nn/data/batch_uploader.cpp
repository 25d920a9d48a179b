// BatchUploader: pinned staging, a copy stream and events around the compute stream.
//
// The orderings that make it safe (slot s, used by every `slots`-th upload):
// - the host overwrites slot s's pinned buffer only after the previous copy out of it finished
//   (event `copied`, waited for on the host);
// - the copy into slot s's device buffers waits for the compute stream to pass the point where
//   the step that last used them had been queued (event `released`, recorded when the next
//   batch is uploaded, waited for by the copy stream);
// - the compute stream waits for the copy of its batch (event `copied`) and nothing else, so
//   the copy runs beside the previous step's kernels;
// - device buffers are allocated by the caching allocator, whose blocks may still be read by
//   queued compute work until that work runs: a fresh buffer is written only after the compute
//   stream passes the allocation point.
#include "nn/data/batch_uploader.h"

#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/factory.h"

#ifdef QGRAD_WITH_CUDA
#include "core/cuda_check.h"
#include "core/cuda_stream.h"
#endif

namespace qgrad::data {

#ifdef QGRAD_WITH_CUDA

namespace {

constexpr const char* kOp = "BatchUploader";

struct PinnedFree {
  void operator()(void* p) const { cudaFreeHost(p); }
};
using PinnedPtr = std::unique_ptr<void, PinnedFree>;

// An event without timing (cheaper to record and wait for).
struct Event {
  cudaEvent_t e = nullptr;
  Event() { QGRAD_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), kOp, "event"); }
  ~Event() { cudaEventDestroy(e); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

}  // namespace

struct BatchUploader::Impl {
  struct Slot {
    PinnedPtr pinned;
    std::size_t capacity = 0;  // bytes of `pinned`
    Tensor data, target;       // on the device
    Event copied, released;
    bool used = false;  // handed out before: `released` guards its device buffers
  };
  int device;
  cudaStream_t compute;
  cudaStream_t copy = nullptr;
  std::vector<std::unique_ptr<Slot>> slots;
  std::int64_t count = 0;

  Impl(int device_index, int n) : device(device_index), compute(cuda_stream(device_index)) {
    const CudaDeviceGuard guard(device);
    QGRAD_CUDA_CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking), kOp, "copy stream");
    for (int i = 0; i < n; ++i) slots.push_back(std::make_unique<Slot>());
  }
  ~Impl() {
    const CudaDeviceGuard guard(device);
    cudaStreamSynchronize(copy);  // no copy may still read a pinned buffer freed below
    cudaStreamDestroy(copy);
  }
};

BatchUploader::BatchUploader(Device device, int slots) : device_(device) {
  QGRAD_CHECK(slots >= 2, ValueError, "BatchUploader: slots must be at least 2, got ", slots);
  check_device_available("BatchUploader", device);
  if (device.is_cuda()) impl_ = std::make_unique<Impl>(device.index, slots);
}

BatchUploader::~BatchUploader() = default;

namespace {

// A device tensor of `like`'s shape and dtype for slot buffer `t`, reallocated when the shape
// changes (the last, smaller batch of an epoch).
bool ensure_buffer(Tensor& t, const Tensor& like, Device device) {
  if (t.defined() && t.shape() == like.shape() && t.dtype() == like.dtype()) return false;
  t = empty(like.shape(), TensorOptions().dtype(like.dtype()).device(device));
  return true;
}

}  // namespace

Batch BatchUploader::upload(const Batch& batch) {
  QGRAD_CHECK(batch.data.defined() && batch.target.defined(), ValueError,
              "BatchUploader::upload: the batch's data and target must be defined");
  if (!impl_) return {batch.data.to(device_), batch.target.to(device_)};
  QGRAD_CHECK(batch.data.device().is_cpu() && batch.target.device().is_cpu(), DeviceError,
              "BatchUploader::upload: expected a batch on the CPU, got data on ",
              batch.data.device(), " and target on ", batch.target.device());
  Impl& im = *impl_;
  const CudaDeviceGuard guard(im.device);
  const std::size_t n = im.slots.size();
  // The previous batch's step has been queued: its slot is free once the compute stream is past
  // this point.
  if (im.count > 0) {
    Impl::Slot& prev =
        *im.slots[static_cast<std::size_t>((im.count - 1) % static_cast<std::int64_t>(n))];
    QGRAD_CUDA_CHECK(cudaEventRecord(prev.released.e, im.compute), kOp, "release event");
  }
  Impl::Slot& s = *im.slots[static_cast<std::size_t>(im.count % static_cast<std::int64_t>(n))];
  ++im.count;

  const Tensor data = batch.data.contiguous(), target = batch.target.contiguous();
  const std::size_t data_bytes = static_cast<std::size_t>(data.numel()) * data.element_size();
  const std::size_t target_bytes = static_cast<std::size_t>(target.numel()) * target.element_size();
  // Host side: the last copy out of this pinned buffer must have finished before it is reused.
  QGRAD_CUDA_CHECK(cudaEventSynchronize(s.copied.e), kOp, "waiting for the slot's last copy");
  if (s.capacity < data_bytes + target_bytes) {
    void* p = nullptr;
    QGRAD_CUDA_CHECK(cudaHostAlloc(&p, data_bytes + target_bytes, cudaHostAllocDefault), kOp,
                     "pinned staging buffer of ", data_bytes + target_bytes, " bytes");
    s.pinned.reset(p);
    s.capacity = data_bytes + target_bytes;
  }
  auto* staging = static_cast<char*>(s.pinned.get());
  std::memcpy(staging, data.raw_data(), data_bytes);
  std::memcpy(staging + data_bytes, target.raw_data(), target_bytes);

  const bool fresh_data = ensure_buffer(s.data, data, device_);
  const bool fresh_target = ensure_buffer(s.target, target, device_);
  if (fresh_data || fresh_target) {
    // New blocks from the caching allocator: wait until the compute stream has passed their
    // allocation (queued work may still read them under their previous owner).
    Event allocated;
    QGRAD_CUDA_CHECK(cudaEventRecord(allocated.e, im.compute), kOp, "allocation event");
    QGRAD_CUDA_CHECK(cudaStreamWaitEvent(im.copy, allocated.e, 0), kOp, "allocation wait");
  }
  if (s.used) QGRAD_CUDA_CHECK(cudaStreamWaitEvent(im.copy, s.released.e, 0), kOp, "slot wait");
  QGRAD_CUDA_CHECK(
      cudaMemcpyAsync(s.data.raw_data(), staging, data_bytes, cudaMemcpyHostToDevice, im.copy), kOp,
      "data ", data.shape());
  QGRAD_CUDA_CHECK(cudaMemcpyAsync(s.target.raw_data(), staging + data_bytes, target_bytes,
                                   cudaMemcpyHostToDevice, im.copy),
                   kOp, "target ", target.shape());
  QGRAD_CUDA_CHECK(cudaEventRecord(s.copied.e, im.copy), kOp, "copy event");
  QGRAD_CUDA_CHECK(cudaStreamWaitEvent(im.compute, s.copied.e, 0), kOp, "copy wait");
  s.used = true;
  return {s.data, s.target};
}

#else  // CPU-only build: only the CPU is accepted (check_device_available throws for CUDA).

struct BatchUploader::Impl {};

BatchUploader::BatchUploader(Device device, int slots) : device_(device) {
  QGRAD_CHECK(slots >= 2, ValueError, "BatchUploader: slots must be at least 2, got ", slots);
  check_device_available("BatchUploader", device);
}

BatchUploader::~BatchUploader() = default;

Batch BatchUploader::upload(const Batch& batch) {
  QGRAD_CHECK(batch.data.defined() && batch.target.defined(), ValueError,
              "BatchUploader::upload: the batch's data and target must be defined");
  return batch;
}

#endif

}  // namespace qgrad::data
