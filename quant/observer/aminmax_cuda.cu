// CUDA min/max reductions for the observers, registered in the "observer.aminmax_into" table:
// the results stay float32 tensors on the GPU. Per tensor, blocks reduce parts of a size-fixed
// count and one block combines them; per channel, one block reduces a channel of the [outer, C,
// inner] layout. Both build an ObservedRange (observed_range.h), as the CPU's torch.aminmax scan:
// NaN anywhere gives NaN, and a zero extreme has the sign of the first zero, whatever the launch
// shape (observed_range_cuda.cuh).
#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda_check.h"
#include "core/cuda_stream.h"
#include "core/factory.h"
#include "quant/observer/aminmax_kernels.h"
#include "quant/observer/observed_range_cuda.cuh"

namespace qgrad::ao {

namespace {

using cuda_range::kRowThreads;

const char* kOp = "aminmax";

// The batch min and max of a range over x (read at its first zero).
__device__ void write_range(const ObservedRange& r, const float* x, float* mn, float* mx) {
  const float zero = r.first_zero == kNoZero ? 0.0f : x[r.first_zero];
  *mn = batch_min(r, zero);
  *mx = batch_max(r, zero);
}

__global__ void combine_kernel(const float* x, const ObservedRange* parts, int count, float* mn,
                               float* mx) {
  __shared__ ObservedRange shared[kRowThreads];
  const ObservedRange r = cuda_range::combine_parts(parts, count, shared);
  if (threadIdx.x == 0) write_range(r, x, mn, mx);
}

__global__ void per_channel_kernel(const float* x, std::int64_t outer, std::int64_t channels,
                                   std::int64_t inner, float* mn, float* mx) {
  __shared__ ObservedRange shared[kRowThreads];
  for (std::int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    const ObservedRange r = cuda_range::block_channel_range(x, outer, channels, inner, c, shared);
    if (threadIdx.x == 0) {
      // The first zero's index counts the channel's elements in order: o * inner + i.
      const std::int64_t z = r.first_zero;
      const float zero = z == kNoZero ? 0.0f : x[((z / inner) * channels + c) * inner + z % inner];
      mn[c] = batch_min(r, zero);
      mx[c] = batch_max(r, zero);
    }
  }
}

void aminmax_into_cuda(const Tensor& x, std::int64_t axis, const Tensor& min, const Tensor& max) {
  QGRAD_CHECK(x.dtype() == kFloat32, DTypeError, kOp, ": input must be float32 here, got ",
              dtype_name(x.dtype()));
  const Tensor xc = x.contiguous();
  const std::int64_t n = xc.numel();
  const int device = x.device().index;
  const CudaDeviceGuard guard(device);
  cudaStream_t stream = cuda_stream(device);
  const float* px = xc.data_ptr<float>();
  float* pn = min.data_ptr<float>();
  float* pm = max.data_ptr<float>();
  if (axis >= 0) {
    std::int64_t outer = 1, inner = 1;
    for (std::int64_t d = 0; d < axis; ++d) outer *= xc.size(d);
    for (std::int64_t d = axis + 1; d < xc.dim(); ++d) inner *= xc.size(d);
    const std::int64_t C = xc.size(axis);
    per_channel_kernel<<<qgrad::cuda::row_blocks(C), kRowThreads, 0, stream>>>(px, outer, C, inner,
                                                                               pn, pm);
    QGRAD_CUDA_CHECK(cudaGetLastError(), kOp, "per-channel kernel launch, shape ", x.shape());
  } else {
    const cuda_range::RangeParts parts =
        cuda_range::launch_range_parts(kOp, px, n, nullptr, x.device(), stream);
    combine_kernel<<<1, kRowThreads, 0, stream>>>(px, parts.parts, parts.count, pn, pm);
    QGRAD_CUDA_CHECK(cudaGetLastError(), kOp, "combine kernel launch");
  }
  min.bump_version();
  max.bump_version();
}

}  // namespace

void register_aminmax_cuda_kernels(KernelRegistry& r) {
  r.table(kAminmaxIntoKernels).define(DeviceType::CUDA, &aminmax_into_cuda, DTypeSet{kFloat32});
}

}  // namespace qgrad::ao
