// Errors that GPU kernels find in their inputs, reported at the host's next wait instead of by a
// synchronisation of their own. A kernel that meets a bad value (a class target out of range,
// say) cannot throw, and checking on the host first would make the host wait for the GPU in
// every training step. So the kernel guards the access (it writes NaN, never reads or writes out
// of bounds) and records the first such error in its device's slot, a few bytes of mapped pinned
// host memory; cuda_stream_synchronize (every copy to the host, item(), qgrad::synchronize)
// checks the slot after the wait and throws the error as an IndexError naming the op, the value
// and the position. PyTorch's device-side assert stops the process's CUDA context instead; here
// the error is an exception and the device stays usable. Include only from .cu files or files
// compiled in CUDA builds.
#pragma once

#include <cstdint>

namespace qgrad {

// What a slot records. Plain data: kernels write it through a mapped pointer.
enum class DeferredErrorKind : std::int32_t { None = 0, ClassTargetOutOfRange = 1 };
enum class DeferredErrorOp : std::int32_t { CrossEntropy = 0, NllLoss = 1 };

struct CudaDeferredError {
  std::int32_t claimed;  // 0 free; the first kernel thread to set it to 1 writes the rest
  std::int32_t ready;    // 1 once the fields below are written
  DeferredErrorKind kind;
  DeferredErrorOp op;
  std::int64_t position, value, classes, ignore_index;
};

// The device pointer of device `device_index`'s slot (created on first use, immortal like the
// streams of core/cuda_stream.h). Throws DeviceError when pinned mapped memory is unavailable.
CudaDeferredError* cuda_deferred_error_slot(int device_index);

// Throws the error recorded in the slot of `device_index`, if any, and clears the slot. Call it
// only after the device's stream has been waited for (cuda_stream_synchronize does).
void throw_cuda_deferred_error(int device_index);

}  // namespace qgrad
