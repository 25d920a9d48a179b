// cuBLAS status checks: QGRAD_CUBLAS_CHECK(call, op, context...) and cublas_check(status, op,
// context...) turn any cublasStatus_t other than CUBLAS_STATUS_SUCCESS into a qgrad::DeviceError
// naming the op, the cuBLAS call, cublasGetStatusString's text and the status name, then the
// context (shapes), formatted only on failure; the message has the same form as the CUDA runtime
// checks of core/cuda_check.h. A separate header so that only files calling cuBLAS include
// <cublas_api.h>; include it only from .cu files or files compiled in CUDA builds. Every cuBLAS
// handle must be bound to the device's qgrad stream (cublasSetStream with cuda_stream(device),
// core/cuda_stream.h).
#pragma once

#include <cublas_api.h>

#include "core/cublas_library.h"
#include "core/cuda_check.h"

namespace qgrad {
namespace detail {

template <typename... Context>
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* op,
                                     const Context&... context) {
  // A status exists only once the library is loaded, so this lookup cannot fail.
  const CublasLibrary& lib = cublas_library(op);
  throw DeviceError(gpu_error_message(op, call, lib.status_string(status), lib.status_name(status),
                                      concat(context...)));
}

}  // namespace detail

// Throws DeviceError naming `op`, the status and the context when `status` is not a success.
template <typename... Context>
void cublas_check(cublasStatus_t status, const char* op, const Context&... context) {
  if (status != CUBLAS_STATUS_SUCCESS) detail::throw_cublas_error(status, "cuBLAS", op, context...);
}

}  // namespace qgrad

// QGRAD_CUBLAS_CHECK(cublasSgemm(...), "matmul", a.shape(), " x ", b.shape());
#define QGRAD_CUBLAS_CHECK(call, ...)                                                \
  do {                                                                               \
    const cublasStatus_t qgrad_cublas_status_ = (call);                              \
    if (qgrad_cublas_status_ != CUBLAS_STATUS_SUCCESS)                               \
      ::qgrad::detail::throw_cublas_error(qgrad_cublas_status_, #call, __VA_ARGS__); \
  } while (0)
