// The per-device deferred error slots of core/cuda_deferred_error.h. Each is a CudaDeferredError
// in device memory, which kernels claim with an ordinary device-scope atomicCAS (atomics on
// mapped host memory are not dependable across PCIe), with a staging copy beside it and a pinned
// host mirror. A checked wait queues, on the device's stream, a one-thread kernel that moves the
// slot into the staging copy and clears it (one step in stream order, so no report queued by
// another thread can fall between a read and a clear), then the copy of the staging area to the
// mirror, waits, and reads the mirror; a mutex per slot keeps concurrent waits off the staging
// area and the mirror. Created on first use under std::call_once and never freed (immortal, as
// the streams).
#include <atomic>
#include <cstdint>
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
  CudaDeferredError* device = nullptr;  // [0]: the slot kernels write; [1]: the staging copy
  CudaDeferredError* host = nullptr;    // pinned mirror of the staging copy
  std::mutex wait;                      // one checked wait at a time uses staging and mirror
  std::atomic<bool> ready{false};       // set once all of the above exist
};

std::vector<Slot>& slots() {
  static auto& s = *new std::vector<Slot>(static_cast<std::size_t>(cuda_visible_device_count()));
  return s;
}

const char* op_name(const CudaDeferredError& e) {
  if (e.op == DeferredErrorOp::Named)
    return reinterpret_cast<const char*>(static_cast<std::uintptr_t>(e.name));
  switch (e.op) {
    case DeferredErrorOp::NllLoss:
      return "nll_loss";
    case DeferredErrorOp::FusedMovingAvgObsFakeQuant:
      return "fused_moving_avg_obs_fake_quant";
    case DeferredErrorOp::ObserverCalculateQParams:
      return "calculate_qparams";
    case DeferredErrorOp::HorizonFakeQuantize:
      return "HorizonFakeQuantize";
    default:
      return "cross_entropy";
  }
}

// Moves the slot's record into the staging copy and clears the slot.
__global__ void take_deferred_error(CudaDeferredError* slot) {
  slot[1] = slot[0];
  slot[0] = CudaDeferredError{};
}

}  // namespace

CudaDeferredError* cuda_deferred_error_slot(int device_index) {
  check_cuda_device_index("cuda_deferred_error_slot", device_index);
  Slot& slot = slots()[static_cast<std::size_t>(device_index)];
  std::call_once(slot.created, [&] {
    CudaDeviceGuard guard(device_index);
    void* device = nullptr;
    QGRAD_CUDA_CHECK(cudaMalloc(&device, 2 * sizeof(CudaDeferredError)), "cuda_deferred_error_slot",
                     "device cuda:", device_index);
    // Zeroed on the stream the kernels run on, so it is ordered before them.
    QGRAD_CUDA_CHECK(
        cudaMemsetAsync(device, 0, 2 * sizeof(CudaDeferredError), cuda_stream(device_index)),
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

void cuda_synchronize_reporting_deferred_errors(int device_index, const char* op) {
  check_cuda_device_index(op, device_index);
  Slot& slot = slots()[static_cast<std::size_t>(device_index)];
  if (!slot.ready.load(std::memory_order_acquire)) {  // no kernel can have reported
    cuda_stream_synchronize_unchecked(device_index, op);
    return;
  }
  CudaDeferredError e{};
  {
    const std::lock_guard<std::mutex> lock(slot.wait);
    cudaStream_t stream = cuda_stream(device_index);
    {
      CudaDeviceGuard guard(device_index);  // a kernel launches on the current device
      take_deferred_error<<<1, 1, 0, stream>>>(slot.device);
      QGRAD_CUDA_CHECK(cudaGetLastError(), op, "taking the deferred errors of cuda:", device_index);
    }
    QGRAD_CUDA_CHECK(cudaMemcpyAsync(slot.host, slot.device + 1, sizeof(CudaDeferredError),
                                     cudaMemcpyDeviceToHost, stream),
                     op, "reading the deferred errors of cuda:", device_index);
    cuda_stream_synchronize_unchecked(device_index, op);
    e = *slot.host;
  }
  QGRAD_CHECK(e.kind != DeferredErrorKind::ClassTargetOutOfRange, IndexError, op_name(e),
              " on cuda:", device_index, ": target value ", e.value, " (at flat position ",
              e.position, ") is out of range for ", e.classes, " classes: expected 0 <= target < ",
              e.classes, " or ignore_index (", e.ignore_index,
              "); found by the GPU kernel and reported at this wait for the GPU");
  QGRAD_CHECK(e.kind != DeferredErrorKind::RangeNotOrdered, ValueError, op_name(e),
              " on cuda:", device_index, ": the running min (", e.low,
              ") should be <= the running max (", e.high, "), both finite",
              e.position >= 0 ? " in channel " + std::to_string(e.position) : std::string(),
              "; NaN in the input makes the running statistics NaN (found by the GPU kernel and "
              "reported at this wait for the GPU)");
  QGRAD_CHECK(e.kind != DeferredErrorKind::QParamsUnusable, ValueError, op_name(e),
              " on cuda:", device_index, ": scale ", e.low, " and zero_point ", e.high,
              e.position >= 0 ? " of channel " + std::to_string(e.position) : std::string(),
              " cannot be used: the scale must be finite and > 0, and an integer zero point must "
              "be an integer in [quant_min, quant_max] = [",
              e.value, ", ", e.classes,
              "] (a float one finite); found by the GPU kernel and reported at this wait for "
              "the GPU");
  QGRAD_CHECK(e.kind != DeferredErrorKind::ParameterUnusable, ValueError, op_name(e),
              " on cuda:", device_index, ": ",
              checked_parameter_name(static_cast<CheckedParameter>(e.classes)),
              e.position > 0 ? "[" + std::to_string(e.position) + "]" : std::string(), " ",
              parameter_rule_text(static_cast<ParameterRule>(e.value)), ", got ", e.low,
              "; found by the GPU kernel and reported at this wait for the GPU");
}

}  // namespace qgrad
