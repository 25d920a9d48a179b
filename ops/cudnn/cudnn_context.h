// cuDNN plumbing shared by the CUDA kernels built on it (mirroring ops/dnnl/dnnl_context.h for
// oneDNN): one cudnnHandle_t per device, created on first use and bound to the device's qgrad
// stream (cuda_stream) on every call; move-only RAII wrappers for the descriptors; and the
// dtype/size conversions every cuDNN call needs. Include only from .cu files of builds with
// cuDNN (QGRAD_WITH_CUDNN): this header includes <cudnn.h>, which CPU-only and cuDNN-less
// builds do not have.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <utility>

#include "core/cuda_cudnn_check.h"
#include "core/dtype.h"

namespace qgrad::cudnn {

// The handle of device `device_index`, bound (cudnnSetStream) to cuda_stream(device_index). The
// caller must hold a CudaDeviceGuard for the device. Handles are created once per device and
// never destroyed (like the streams: destroying them during static destruction, after the CUDA
// runtime may have shut down, would be an error). Thread-safe creation; a handle may be used by
// one thread at a time per cuDNN's rules, which qgrad's single-stream-per-device use satisfies
// as long as kernels for one device are not called from several threads at once.
cudnnHandle_t handle(int device_index);

// A cuDNN descriptor of type T, created in the constructor, destroyed in the destructor.
template <typename T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class Descriptor {
 public:
  Descriptor() { QGRAD_CUDNN_CHECK(Create(&d_), "cudnn", "creating a descriptor"); }
  ~Descriptor() {
    if (d_) Destroy(d_);  // cannot fail for a valid descriptor; nothing to report in a destructor
  }
  Descriptor(Descriptor&& other) noexcept : d_(std::exchange(other.d_, nullptr)) {}
  Descriptor& operator=(Descriptor&& other) noexcept {
    std::swap(d_, other.d_);
    return *this;
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;

  T get() const { return d_; }

 private:
  T d_ = nullptr;
};

using TensorDescriptor = Descriptor<cudnnTensorDescriptor_t, &cudnnCreateTensorDescriptor,
                                    &cudnnDestroyTensorDescriptor>;
using FilterDescriptor = Descriptor<cudnnFilterDescriptor_t, &cudnnCreateFilterDescriptor,
                                    &cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor =
    Descriptor<cudnnConvolutionDescriptor_t, &cudnnCreateConvolutionDescriptor,
               &cudnnDestroyConvolutionDescriptor>;
using PoolingDescriptor = Descriptor<cudnnPoolingDescriptor_t, &cudnnCreatePoolingDescriptor,
                                     &cudnnDestroyPoolingDescriptor>;

// CUDNN_DATA_FLOAT / CUDNN_DATA_DOUBLE; DTypeError naming `op` for any other dtype.
cudnnDataType_t data_type(DType dtype, const char* op);

// `v` as the int cuDNN's legacy API takes; ShapeError naming `op` and `what` when it does not fit.
int to_int(std::int64_t v, const char* op, const char* what);

// A packed NCHW tensor descriptor of [n, c, h, w].
TensorDescriptor nchw_descriptor(DType dtype, std::int64_t n, std::int64_t c, std::int64_t h,
                                 std::int64_t w, const char* op);

// The alpha = 1 / beta = 0 or 1 scaling factors cuDNN reads through a void pointer: double for
// double data, float otherwise.
struct Scale {
  float f;
  double d;
  const void* for_type(DType dtype) const {
    return dtype == kFloat64 ? static_cast<const void*>(&d) : &f;
  }
};
inline constexpr Scale kOne{1.0f, 1.0};
inline constexpr Scale kZero{0.0f, 0.0};

}  // namespace qgrad::cudnn
