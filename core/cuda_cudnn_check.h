// cuDNN status checks: QGRAD_CUDNN_CHECK(call, op, context...) and cudnn_check(status, op,
// context...) turn any cudnnStatus_t other than CUDNN_STATUS_SUCCESS into a qgrad::DeviceError
// naming the op, the cuDNN call, cudnnGetErrorString's text and (cuDNN 9 and later) the detail
// cudnnGetLastErrorString gives, then the context (shapes), formatted only on failure; the
// message has the same form as the CUDA runtime checks of core/cuda_check.h. A separate header so
// that only files calling cuDNN include <cudnn.h> (and link it); include it only from .cu files or
// files compiled in CUDA builds. Every cuDNN handle must be bound to the device's qgrad stream
// (cudnnSetStream with cuda_stream(device), core/cuda_stream.h).
#pragma once

#include <cudnn.h>

#include <string>

#include "core/cuda_check.h"

namespace qgrad {
namespace detail {

template <typename... Context>
[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* op,
                                    const Context&... context) {
  std::string text = cudnnGetErrorString(status);
#if defined(CUDNN_MAJOR) && CUDNN_MAJOR >= 9
  // cuDNN 9 keeps a message saying which parameter was bad; the status alone rarely does.
  char detail[512] = {};
  cudnnGetLastErrorString(detail, sizeof detail);
  if (detail[0] != '\0') text += std::string(": ") + detail;
#endif
  throw DeviceError(gpu_error_message(op, call, text.c_str(), nullptr, concat(context...)));
}

}  // namespace detail

// Throws DeviceError naming `op`, the status and the context when `status` is not a success.
template <typename... Context>
void cudnn_check(cudnnStatus_t status, const char* op, const Context&... context) {
  if (status != CUDNN_STATUS_SUCCESS) detail::throw_cudnn_error(status, "cuDNN", op, context...);
}

}  // namespace qgrad

// QGRAD_CUDNN_CHECK(cudnnConvolutionForward(...), "conv2d", x.shape(), " * ", w.shape());
#define QGRAD_CUDNN_CHECK(call, ...)                                               \
  do {                                                                             \
    const cudnnStatus_t qgrad_cudnn_status_ = (call);                              \
    if (qgrad_cudnn_status_ != CUDNN_STATUS_SUCCESS)                               \
      ::qgrad::detail::throw_cudnn_error(qgrad_cudnn_status_, #call, __VA_ARGS__); \
  } while (0)
