// CUDA runtime error checks. QGRAD_CUDA_CHECK(call, op, context...) and cuda_check(error, op,
// context...) turn any cudaError_t other than cudaSuccess into a qgrad::DeviceError whose message
// names the op ("to", "fill_", "allocate"), the runtime call that failed, cudaGetErrorString's
// text and the error's name, then the context the caller passes (shapes, dtypes, sizes, the
// device), formatted with detail::concat only when the check fails. A failed call is also cleared
// from the runtime's last-error slot so that the next launch check does not report it again
// (sticky errors such as an illegal address cannot be cleared: every later call reports them).
// This header includes <cuda_runtime_api.h>: include it only from .cu files or files compiled in
// CUDA builds (QGRAD_WITH_CUDA), never from a CPU-only header. cuBLAS and cuDNN statuses have
// their own headers (core/cuda_cublas_check.h, core/cuda_cudnn_check.h) so that files that do
// not use those libraries do not include them.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "core/error.h"

namespace qgrad {
namespace detail {

// "<op>: <call> failed: <text> (<name>); <context>", where <call> is the called function's name
// (the stringified expression up to its first '('); "<op>: CUDA error: ..." when the call is
// unknown (null); "; <context>" is left out when the context is empty. Shared by the cuBLAS and
// cuDNN checks.
inline std::string gpu_error_message(const char* op, const char* call, const char* text,
                                     const char* name, const std::string& context) {
  std::string message = std::string(op) + ": ";
  if (call) {
    const std::string function(call);
    message += function.substr(0, function.find('(')) + " failed: ";
  } else {
    message += "CUDA error: ";
  }
  message += text ? text : "?";
  if (name) message += std::string(" (") + name + ")";
  if (!context.empty()) message += "; " + context;
  return message;
}

template <typename... Context>
[[noreturn]] void throw_cuda_error(cudaError_t error, const char* call, const char* op,
                                   const Context&... context) {
  cudaGetLastError();  // clear a non-sticky error so the next launch check does not see it
  throw DeviceError(gpu_error_message(op, call, cudaGetErrorString(error), cudaGetErrorName(error),
                                      concat(context...)));
}

}  // namespace detail

// Throws DeviceError naming `op`, the error and the context when `error` is not cudaSuccess.
template <typename... Context>
void cuda_check(cudaError_t error, const char* op, const Context&... context) {
  if (error != cudaSuccess) detail::throw_cuda_error(error, nullptr, op, context...);
}

}  // namespace qgrad

// QGRAD_CUDA_CHECK(cudaMemcpyAsync(...), "to", "shape ", t.shape(), ", ", n, " bytes");
// The op is the first variadic argument so that a call without context stays ISO C++17.
#define QGRAD_CUDA_CHECK(call, ...)                                             \
  do {                                                                          \
    const cudaError_t qgrad_cuda_error_ = (call);                               \
    if (qgrad_cuda_error_ != cudaSuccess)                                       \
      ::qgrad::detail::throw_cuda_error(qgrad_cuda_error_, #call, __VA_ARGS__); \
  } while (0)
