// The one CUDA stream of each device, and the device bookkeeping around it. qgrad queues all of
// its GPU work on cuda_stream(device): every kernel launch, every cudaMemcpyAsync/cudaMemsetAsync,
// and every cuBLAS and cuDNN call (their handles bound with cublasSetStream/cudnnSetStream). The
// streams are created with cudaStreamNonBlocking, so they never wait for the legacy default
// stream (stream 0) and stream 0 never waits for them: work queued on stream 0 or on another
// stream is NOT ordered with qgrad's and races with it. One stream per device is what makes the
// caching allocator (core/allocator_cuda.cu) safe without events: a freed block is handed out
// again only to later work on the same stream, which runs after all work queued before the free.
// The host waits only where it must (a copy to host memory, emptying the allocator's cache).
// The streams are immortal: destroying one during static destruction, after the CUDA runtime may
// have shut down, would be an error. Include only from .cu files or files compiled in CUDA builds
// (QGRAD_WITH_CUDA): this header includes <cuda_runtime_api.h>.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace qgrad {

// The number of visible CUDA devices, queried once per process and cached (0 without a driver or
// device; later changes to CUDA_VISIBLE_DEVICES are not seen).
int cuda_visible_device_count();

// Throws DeviceError naming `op`, the index and the visible count when `device_index` is not a
// visible CUDA device.
void check_cuda_device_index(const char* op, int device_index);

// The stream all qgrad work on device `device_index` is queued on, created on first use
// (cudaStreamNonBlocking). Throws DeviceError for an index that is not visible or when the
// stream cannot be created.
cudaStream_t cuda_stream(int device_index);

// Waits for all work queued on the device's stream; the first error of an asynchronous kernel
// or copy surfaces here as a DeviceError naming `op`, and the first bad input a kernel found
// (core/cuda_deferred_error.h) as the error it describes.
void cuda_stream_synchronize(int device_index, const char* op);
// The same wait without the deferred-error check, for the allocator, which must not fail an
// allocation over an unrelated op's bad input (the next checked wait reports it).
void cuda_stream_synchronize_unchecked(int device_index, const char* op);

// How many times the host has waited for the device's stream (either wait above: every copy to
// the host, item(), qgrad::synchronize) since the process started. A statistic, like the
// allocator's: what a test of a training step's hot path counts (it must not change).
std::int64_t cuda_host_waits(int device_index);

// Makes `device_index` the calling thread's current device for the guard's lifetime and restores
// the previous one afterwards (kernels must be launched, and memory allocated, on the stream's
// own device).
class CudaDeviceGuard {
 public:
  explicit CudaDeviceGuard(int device_index);
  ~CudaDeviceGuard();
  CudaDeviceGuard(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard& operator=(const CudaDeviceGuard&) = delete;

 private:
  int previous_ = -1;  // -1: the current device was already right, nothing to restore
};

}  // namespace qgrad
