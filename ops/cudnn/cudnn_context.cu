// The cuDNN handles and helpers of ops/cudnn/cudnn_context.h: one handle per visible device,
// created under std::call_once in an immortal array (as the streams of core/cuda_stream.cu), and
// rebound to the device's qgrad stream on every use. Built only with cuDNN (QGRAD_WITH_CUDNN).
#ifdef QGRAD_WITH_CUDNN

#include <limits>
#include <mutex>
#include <vector>

#include "core/cuda_stream.h"
#include "core/error.h"
#include "ops/cudnn/cudnn_context.h"

namespace qgrad::cudnn {

namespace {

struct HandleSlot {
  std::once_flag created;
  cudnnHandle_t handle = nullptr;
};

// One slot per visible device; immortal (see the header comment).
std::vector<HandleSlot>& handle_slots() {
  static auto& slots =
      *new std::vector<HandleSlot>(static_cast<std::size_t>(cuda_visible_device_count()));
  return slots;
}

}  // namespace

cudnnHandle_t handle(int device_index) {
  const cudaStream_t stream = cuda_stream(device_index);  // also checks the index
  HandleSlot& slot = handle_slots()[static_cast<std::size_t>(device_index)];
  // call_once: a throwing creation leaves the flag unset, so a later call tries again.
  std::call_once(slot.created, [&] {
    CudaDeviceGuard guard(device_index);  // a handle belongs to the device current at creation
    QGRAD_CUDNN_CHECK(cudnnCreate(&slot.handle), "cudnn", "device cuda:", device_index);
  });
  // Rebound on every use: cheap, and it keeps every cuDNN call on qgrad's stream whatever was
  // set before.
  QGRAD_CUDNN_CHECK(cudnnSetStream(slot.handle, stream), "cudnn", "device cuda:", device_index);
  return slot.handle;
}

cudnnDataType_t data_type(DType dtype, const char* op) {
  switch (dtype) {
    case kFloat32:
      return CUDNN_DATA_FLOAT;
    case kFloat64:
      return CUDNN_DATA_DOUBLE;
    default:
      throw DTypeError(detail::concat(op, ": the cuDNN kernels take float32 or float64, got ",
                                      dtype_name(dtype)));
  }
}

int to_int(std::int64_t v, const char* op, const char* what) {
  QGRAD_CHECK(v >= 0 && v <= std::numeric_limits<int>::max(), ShapeError, op, ": ", what, " = ", v,
              " does not fit cuDNN's int sizes");
  return static_cast<int>(v);
}

TensorDescriptor nchw_descriptor(DType dtype, std::int64_t n, std::int64_t c, std::int64_t h,
                                 std::int64_t w, const char* op) {
  TensorDescriptor d;
  QGRAD_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d.get(), CUDNN_TENSOR_NCHW, data_type(dtype, op),
                                               to_int(n, op, "batch"), to_int(c, op, "channels"),
                                               to_int(h, op, "height"), to_int(w, op, "width")),
                    op, "tensor [", n, ", ", c, ", ", h, ", ", w, "]");
  return d;
}

}  // namespace qgrad::cudnn

#endif  // QGRAD_WITH_CUDNN
