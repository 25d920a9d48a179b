// The per-device deferred error slots of core/cuda_deferred_error.h: one CudaDeferredError each
// in device memory (so kernels claim it with an ordinary device-scope atomicCAS; atomics on
// mapped host memory are not reliable across PCIe) and its pinned host mirror, filled by a copy
// queued on the device's stream before each checked wait. Created on first use under
// std::call_once and never freed (immortal, as the streams).
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "core/cuda_check.h"
#include "core/cuda_deferred_error.h"
#include "core/cuda_stream.h"
#include "core/error.h"

namespace qgrad {

namespace {

struct Slot {
  std::once_flag created;
  CudaDeferredError* device = nullptr;
  CudaDeferredError* host = nullptr;  // pinned mirror
  std::atomic<bool> ready{false};     // set once both exist: waits before that skip the read
};

std::vector<Slot>& slots() {
  static auto& s = *new std::vector<Slot>(static_cast<std::size_t>(cuda_visible_device_count()));
  return s;
}

const char* op_name(DeferredErrorOp op) {
  return op == DeferredErrorOp::NllLoss ? "nll_loss" : "cross_entropy";
}

}  // namespace

CudaDeferredError* cuda_deferred_error_slot(int device_index) {
  check_cuda_device_index("cuda_deferred_error_slot", device_index);
  Slot& slot = slots()[static_cast<std::size_t>(device_index)];
  std::call_once(slot.created, [&] {
    CudaDeviceGuard guard(device_index);
    void* device = nullptr;
    QGRAD_CUDA_CHECK(cudaMalloc(&device, sizeof(CudaDeferredError)), "cuda_deferred_error_slot",
                     "device cuda:", device_index);
    // Zeroed on the stream the kernels run on, so it is ordered before them.
    QGRAD_CUDA_CHECK(
        cudaMemsetAsync(device, 0, sizeof(CudaDeferredError), cuda_stream(device_index)),
        "cuda_deferred_error_slot", "device cuda:", device_index);
    void* host = nullptr;
    QGRAD_CUDA_CHECK(cudaMallocHost(&host, sizeof(CudaDeferredError)), "cuda_deferred_error_slot",
                     "pinned mirror");
    slot.device = static_cast<CudaDeferredError*>(device);
    slot.host = static_cast<CudaDeferredError*>(host);
    *slot.host = CudaDeferredError{};
    slot.ready.store(true, std::memory_order_release);
  });
  return slot.device;
}

bool queue_cuda_deferred_error_read(int device_index, const char* op) {
  Slot& slot = slots()[static_cast<std::size_t>(device_index)];
  if (!slot.ready.load(std::memory_order_acquire)) return false;  // no kernel can have reported
  QGRAD_CUDA_CHECK(cudaMemcpyAsync(slot.host, slot.device, sizeof(CudaDeferredError),
                                   cudaMemcpyDeviceToHost, cuda_stream(device_index)),
                   op, "reading the deferred error slot of cuda:", device_index);
  return true;
}

void throw_cuda_deferred_error(int device_index) {
  Slot& slot = slots()[static_cast<std::size_t>(device_index)];
  if (!slot.ready.load(std::memory_order_acquire) || slot.host->claimed == 0) return;
  const CudaDeferredError e = *slot.host;
  *slot.host = CudaDeferredError{};
  {
    CudaDeviceGuard guard(device_index);
    QGRAD_CUDA_CHECK(
        cudaMemsetAsync(slot.device, 0, sizeof(CudaDeferredError), cuda_stream(device_index)),
        "cuda_deferred_error_slot", "clearing cuda:", device_index);
  }
  QGRAD_CHECK(e.kind != DeferredErrorKind::ClassTargetOutOfRange, IndexError, op_name(e.op),
              " on cuda:", device_index, ": target value ", e.value, " (at flat position ",
              e.position, ") is out of range for ", e.classes, " classes: expected 0 <= target < ",
              e.classes, " or ignore_index (", e.ignore_index,
              "); found by the GPU kernel and reported at this wait for the GPU");
}

}  // namespace qgrad
