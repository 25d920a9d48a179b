// The per-device streams of core/cuda_stream.h: the visible device count (queried once), one
// cudaStreamNonBlocking stream per device created on first use under std::call_once, the count
// of host waits per device, and the device guard. The per-device slots live in an immortal array
// sized by the device count, so a stream is never destroyed (no cudaStreamDestroy after the runtime
// has shut down).
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

struct StreamSlot {
  std::once_flag created;
  cudaStream_t stream = nullptr;
  std::atomic<std::int64_t> waits{0};  // host waits for the stream (cuda_host_waits)
};

// One slot per visible device; immortal (see the header comment). vector(n) constructs the slots
// in place, which once_flag (neither copyable nor movable) needs.
std::vector<StreamSlot>& stream_slots() {
  static auto& slots =
      *new std::vector<StreamSlot>(static_cast<std::size_t>(cuda_visible_device_count()));
  return slots;
}

}  // namespace

int cuda_visible_device_count() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();  // no driver or no device: not an error here, just none visible
      return 0;
    }
    return n;
  }();
  return count;
}

void check_cuda_device_index(const char* op, int device_index) {
  const int count = cuda_visible_device_count();
  QGRAD_CHECK(device_index >= 0 &&
                      device_index<count, DeviceError, op, ": CUDA device index ", device_index,
                                   " is not available (", count, " CUDA device(s) visible", count> 0
                  ? ", indices 0.." + std::to_string(count - 1)
                  : std::string(),
              ")");
}

cudaStream_t cuda_stream(int device_index) {
  check_cuda_device_index("cuda_stream", device_index);
  StreamSlot& slot = stream_slots()[static_cast<std::size_t>(device_index)];
  // call_once: a throwing creation leaves the flag unset, so a later call tries again.
  std::call_once(slot.created, [&] {
    CudaDeviceGuard guard(device_index);  // a stream belongs to the device current at creation
    QGRAD_CUDA_CHECK(cudaStreamCreateWithFlags(&slot.stream, cudaStreamNonBlocking), "cuda_stream",
                     "device cuda:", device_index);
  });
  return slot.stream;
}

void cuda_stream_synchronize_unchecked(int device_index, const char* op) {
  cudaStream_t stream = cuda_stream(device_index);  // checks the index
  // The checked wait ends here too, so this counts every wait once.
  stream_slots()[static_cast<std::size_t>(device_index)].waits.fetch_add(1,
                                                                         std::memory_order_relaxed);
  QGRAD_CUDA_CHECK(cudaStreamSynchronize(stream), op, "device cuda:", device_index);
}

void cuda_stream_synchronize(int device_index, const char* op) {
  // The wait also reports what the kernels found in their inputs meanwhile.
  cuda_synchronize_reporting_deferred_errors(device_index, op);
}

std::int64_t cuda_host_waits(int device_index) {
  check_cuda_device_index("cuda_host_waits", device_index);
  return stream_slots()[static_cast<std::size_t>(device_index)].waits.load(
      std::memory_order_relaxed);
}

CudaDeviceGuard::CudaDeviceGuard(int device_index) {
  int current = -1;
  QGRAD_CUDA_CHECK(cudaGetDevice(&current), "CudaDeviceGuard");
  if (current != device_index) {
    QGRAD_CUDA_CHECK(cudaSetDevice(device_index), "CudaDeviceGuard", "device cuda:", device_index);
    previous_ = current;
  }
}

CudaDeviceGuard::~CudaDeviceGuard() {
  // Best effort: a destructor must not throw, and the previous device was valid a moment ago.
  if (previous_ >= 0 && cudaSetDevice(previous_) != cudaSuccess) cudaGetLastError();
}

}  // namespace qgrad
