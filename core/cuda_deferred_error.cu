// The per-device deferred error slots of core/cuda_deferred_error.h: one CudaDeferredError each
// in pinned host memory mapped into the device's address space (cudaHostAlloc with
// cudaHostAllocMapped), so kernels write it directly and the host reads it after a wait with no
// copy. Created on first use under std::call_once and never freed (immortal, as the streams).
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
  CudaDeferredError* host = nullptr;
  CudaDeferredError* device = nullptr;
};

std::vector<Slot>& slots() {
  static auto& s = *new std::vector<Slot>(static_cast<std::size_t>(cuda_visible_device_count()));
  return s;
}

Slot& slot_of(int device_index) {
  check_cuda_device_index("cuda_deferred_error_slot", device_index);
  Slot& slot = slots()[static_cast<std::size_t>(device_index)];
  std::call_once(slot.created, [&] {
    CudaDeviceGuard guard(device_index);
    void* host = nullptr;
    QGRAD_CUDA_CHECK(cudaHostAlloc(&host, sizeof(CudaDeferredError), cudaHostAllocMapped),
                     "cuda_deferred_error_slot", "device cuda:", device_index);
    auto* h = static_cast<CudaDeferredError*>(host);
    *h = CudaDeferredError{};
    void* device = nullptr;
    QGRAD_CUDA_CHECK(cudaHostGetDevicePointer(&device, host, 0), "cuda_deferred_error_slot",
                     "device cuda:", device_index);
    slot.host = h;
    slot.device = static_cast<CudaDeferredError*>(device);
  });
  return slot;
}

const char* op_name(DeferredErrorOp op) {
  return op == DeferredErrorOp::NllLoss ? "nll_loss" : "cross_entropy";
}

}  // namespace

CudaDeferredError* cuda_deferred_error_slot(int device_index) {
  return slot_of(device_index).device;
}

void throw_cuda_deferred_error(int device_index) {
  Slot& slot = slots()[static_cast<std::size_t>(device_index)];
  if (slot.host == nullptr || slot.host->ready == 0) return;  // never created, or nothing found
  const CudaDeferredError e = *slot.host;
  *slot.host = CudaDeferredError{};  // cleared: the device is usable again
  QGRAD_CHECK(e.kind != DeferredErrorKind::ClassTargetOutOfRange, IndexError, op_name(e.op),
              " on cuda:", device_index, ": target value ", e.value, " (at flat position ",
              e.position, ") is out of range for ", e.classes, " classes: expected 0 <= target < ",
              e.classes, " or ignore_index (", e.ignore_index,
              "); found by the GPU kernel and reported at this wait for the GPU");
}

}  // namespace qgrad
