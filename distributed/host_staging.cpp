// HostStaging: pinned host copies of GPU tensors for the collectives (CUDA builds), the tensor's
// own memory on the CPU. The copies go on the device's one stream (core/cuda_stream.h) and the
// host waits for them: MPI must not read the buffer before the copy has landed, and the tensor
// must hold the result before later kernels read it.
#include "distributed/host_staging.h"

#include "core/error.h"

#ifdef QGRAD_WITH_CUDA
#include "core/cuda_check.h"
#include "core/cuda_stream.h"
#endif

namespace qgrad::distributed {

#ifdef QGRAD_WITH_CUDA
struct HostStaging::Pinned {
  void* p = nullptr;
  explicit Pinned(std::size_t bytes) {
    QGRAD_CUDA_CHECK(cudaMallocHost(&p, bytes == 0 ? 1 : bytes), "distributed",
                     "pinned staging buffer");
  }
  ~Pinned() { cudaFreeHost(p); }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
};
#else
struct HostStaging::Pinned {};
#endif

HostStaging::HostStaging(const Tensor& t, bool copy_in)
    : tensor_(t), bytes_(static_cast<std::size_t>(t.numel()) * t.element_size()) {
  QGRAD_CHECK(t.is_contiguous(), ValueError, "distributed: the tensor must be contiguous");
  if (t.device().is_cpu()) {
    data_ = t.raw_data();
    return;
  }
#ifdef QGRAD_WITH_CUDA
  const int dev = t.device().index;
  CudaDeviceGuard guard(dev);
  pinned_ = std::make_unique<Pinned>(bytes_);
  data_ = pinned_->p;
  if (copy_in && bytes_ > 0) {
    QGRAD_CUDA_CHECK(
        cudaMemcpyAsync(data_, t.raw_data(), bytes_, cudaMemcpyDeviceToHost, cuda_stream(dev)),
        "distributed", "copy to the staging buffer");
    cuda_stream_synchronize(dev, "distributed");
  }
#else
  (void)copy_in;
  throw DeviceError("distributed: tensors on " + t.device().str() +
                    " need a build with CUDA (this one is CPU only)");
#endif
}

HostStaging::~HostStaging() = default;
HostStaging::HostStaging(HostStaging&&) noexcept = default;
HostStaging& HostStaging::operator=(HostStaging&&) noexcept = default;

void HostStaging::copy_back() const {
  if (tensor_.device().is_cpu() || bytes_ == 0) return;
#ifdef QGRAD_WITH_CUDA
  const int dev = tensor_.device().index;
  CudaDeviceGuard guard(dev);
  QGRAD_CUDA_CHECK(
      cudaMemcpyAsync(tensor_.raw_data(), data_, bytes_, cudaMemcpyHostToDevice, cuda_stream(dev)),
      "distributed", "copy from the staging buffer");
  // The pinned buffer is freed with this object: the copy must have read it by then.
  cuda_stream_synchronize(dev, "distributed");
#endif
}

}  // namespace qgrad::distributed
