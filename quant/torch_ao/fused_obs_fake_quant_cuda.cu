// CUDA kernels of torch.ao's fused observer + fake quantization, registered in the
// "torch_ao.fused_moving_avg_obs_fake_quant" and "torch_ao.masked_gradient_bits" tables. The
// flags and the whole state stay on the device: the kernels read observer_on and fake_quant_on
// where they lie and update the running statistics, scale and zero point in place, so a QAT step
// never makes the host wait. Running statistics that fail min <= max (NaN) are recorded in the
// device's deferred-error slot and thrown at the host's next wait (core/cuda_deferred_error.h);
// the rows they concern become NaN. Per tensor: blocks reduce fixed, size-determined chunks to
// partial ranges, one block combines them and takes the step (running statistics, qparams), and
// a grid-stride pass writes the output and the packed mask, a warp's 32 mask bits gathered by a
// ballot. Per channel (axis 0, each channel one contiguous row): one block per row does all of it.
// The range, the step and the element are fused_obs_fake_quant_math.h's, as on the CPU; min and
// max are exact in any order and the sign of a zero extreme comes from the first zero's position,
// so the GPU gives the CPU's bits (and the same bits run after run) for every launch shape.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "core/cuda_block_reduce.cuh"
#include "core/cuda_check.h"
#include "core/cuda_deferred_error.cuh"
#include "core/cuda_map.cuh"
#include "core/cuda_stream.h"
#include "core/factory.h"
#include "quant/observer/observed_range_cuda.cuh"
#include "quant/torch_ao/fused_obs_fake_quant_kernels.h"
#include "quant/torch_ao/fused_obs_fake_quant_math.h"

namespace qgrad::ao {

namespace {

using cuda::kRowThreads;
using fused::ObservedRange;

const char* kOp = "fused_moving_avg_obs_fake_quant";

// The state's device pointers, as one kernel argument.
struct DeviceState {
  const std::int64_t* observe;
  const std::int64_t* fake_quant;
  float* rmin;
  float* rmax;
  float* scale;
  std::int32_t* zp;
  CudaDeferredError* error;
};

DeviceState device_state(const FusedObsFakeQuantState& s, int device) {
  return {s.observer_on.data_ptr<std::int64_t>(),
          s.fake_quant_on.data_ptr<std::int64_t>(),
          s.running_min.data_ptr<float>(),
          s.running_max.data_ptr<float>(),
          s.scale.data_ptr<float>(),
          s.zero_point.data_ptr<std::int32_t>(),
          cuda_deferred_error_slot(device)};
}

// Per tensor, pass 2 (one block): the parts combined, then the step.
__global__ void per_tensor_step_kernel(const float* x, const ObservedRange* parts, int count,
                                       FusedObsFakeQuantParams p, DeviceState s) {
  __shared__ ObservedRange shared[kRowThreads];
  const bool observe = *s.observe != 0;
  const ObservedRange r =
      cuda_range::combine_parts(parts, observe ? count : 0, shared);  // empty when not observing
  if (threadIdx.x != 0) return;
  const float zero = r.first_zero == fused::kNoZero ? 0.0f : x[r.first_zero];
  fused::ChosenQParams q{};
  if (!fused::fused_step(p, observe, *s.fake_quant != 0, fused::batch_min(r, zero),
                         fused::batch_max(r, zero), *s.rmin, *s.rmax, q)) {
    cuda::report_range_not_ordered(s.error, DeferredErrorOp::FusedMovingAvgObsFakeQuant, -1,
                                   *s.rmin, *s.rmax);
  } else if (*s.fake_quant != 0) {
    *s.scale = q.scale;
    *s.zp = q.zero_point;
  }
}

// Per tensor, pass 3: y and the packed mask. Each warp takes 32 consecutive elements at a time,
// and its first lane stores their 32 mask bits (4 whole bytes, the last ones cut at ceil(n / 8)).
__global__ void per_tensor_fake_quant_kernel(const float* x, float* y, std::uint8_t* bits,
                                             std::int64_t n, FusedObsFakeQuantParams p,
                                             DeviceState s) {
  const bool fake_quant = *s.fake_quant != 0;
  const bool ok = *s.rmin <= *s.rmax;  // else the step reported the error
  const fused::FakeQuantElem elem =
      fused::make_fake_quant_elem(*s.scale, *s.zp, p.quant_min, p.quant_max);
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const std::int64_t warp = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * blockDim.x / 32;
  const std::int64_t bytes = (n + 7) / 8;
  for (std::int64_t base = warp * 32; base < n; base += warps * 32) {  // uniform over the warp
    const std::int64_t i = base + lane;
    std::uint8_t m = 0;
    if (i < n) {
      if (!fake_quant) {
        y[i] = x[i];
        m = 1;
      } else if (ok) {
        y[i] = elem(x[i], m);
      } else {
        y[i] = std::numeric_limits<float>::quiet_NaN();
      }
    }
    const unsigned word = __ballot_sync(0xffffffffu, m != 0);
    if (bits != nullptr && lane == 0)
      for (int k = 0; k < 4 && base / 8 + k < bytes; ++k)
        bits[base / 8 + k] = static_cast<std::uint8_t>(word >> (8 * k));
  }
}

// Per channel: block by block, channel c's row of `inner` elements.
__global__ void per_channel_kernel(const float* x, float* y, std::uint8_t* mask,
                                   std::int64_t channels, std::int64_t inner,
                                   FusedObsFakeQuantParams p, DeviceState s) {
  __shared__ ObservedRange shared[kRowThreads];
  __shared__ fused::FakeQuantElem elem;
  __shared__ int mode;  // 0 fake quantize, 1 copy, 2 the range failed
  const bool observe = *s.observe != 0, fake_quant = *s.fake_quant != 0;
  for (std::int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    const float* xr = x + c * inner;
    float* yr = y + c * inner;
    ObservedRange r = fused::empty_range();
    if (observe) r = cuda_range::block_row_range(xr, inner, shared);
    if (threadIdx.x == 0) {
      const float zero = r.first_zero == fused::kNoZero ? 0.0f : xr[r.first_zero];
      fused::ChosenQParams q{};
      const bool ok = fused::fused_step(p, observe, fake_quant, fused::batch_min(r, zero),
                                        fused::batch_max(r, zero), s.rmin[c], s.rmax[c], q);
      if (!ok) {
        cuda::report_range_not_ordered(s.error, DeferredErrorOp::FusedMovingAvgObsFakeQuant, c,
                                       s.rmin[c], s.rmax[c]);
        mode = 2;
      } else if (fake_quant) {
        s.scale[c] = q.scale;
        s.zp[c] = q.zero_point;
        elem = fused::make_fake_quant_elem(q.scale, q.zero_point, p.quant_min, p.quant_max);
        mode = 0;
      } else {
        mode = 1;
      }
    }
    __syncthreads();
    const int how = mode;
    const fused::FakeQuantElem e = elem;
    for (std::int64_t i = threadIdx.x; i < inner; i += blockDim.x) {
      std::uint8_t m = 0;
      if (how == 0) {
        yr[i] = e(xr[i], m);
      } else if (how == 1) {
        yr[i] = xr[i];
        m = 1;
      } else {
        yr[i] = std::numeric_limits<float>::quiet_NaN();
      }
      if (mask != nullptr) mask[c * inner + i] = m;
    }
    __syncthreads();  // mode and elem are the next channel's
  }
}

void fused_moving_avg_obs_fake_quant_cuda(const Tensor& x, const FusedObsFakeQuantParams& p,
                                          const FusedObsFakeQuantState& state, const Tensor& y,
                                          const Tensor& mask) {
  const std::int64_t n = x.numel();  // float32: the table holds no other dtype
  if (n == 0) return;
  const int device = x.device().index;
  const CudaDeviceGuard guard(device);
  cudaStream_t stream = cuda_stream(device);
  const DeviceState s = device_state(state, device);
  const float* px = x.data_ptr<float>();
  float* py = y.data_ptr<float>();
  std::uint8_t* pm = mask.defined() ? mask.data_ptr<std::uint8_t>() : nullptr;
  if (p.per_channel) {
    const std::int64_t C = x.size(0);
    per_channel_kernel<<<cuda::row_blocks(C), kRowThreads, 0, stream>>>(px, py, pm, C, n / C, p, s);
    QGRAD_CUDA_CHECK(cudaGetLastError(), kOp, "per-channel kernel launch, shape ", x.shape());
    return;
  }
  const cuda_range::RangeParts parts =
      cuda_range::launch_range_parts(kOp, px, n, s.observe, x.device(), stream);
  per_tensor_step_kernel<<<1, kRowThreads, 0, stream>>>(px, parts.parts, parts.count, p, s);
  QGRAD_CUDA_CHECK(cudaGetLastError(), kOp, "step kernel launch");
  per_tensor_fake_quant_kernel<<<cuda::map_blocks(n), cuda::kMapThreads, 0, stream>>>(px, py, pm, n,
                                                                                      p, s);
  QGRAD_CUDA_CHECK(cudaGetLastError(), kOp, "fake quant kernel launch, shape ", x.shape());
}

// dx[i] = masked_bit_gradient(dy[i], bit i of the packed mask).
struct MaskedBitsGradient {
  const float* dy;
  const std::uint8_t* bits;
  float* dx;
  __device__ void operator()(std::int64_t i) const {
    dx[i] = fused::masked_bit_gradient(dy[i], bits[i / 8], static_cast<unsigned>(i % 8));
  }
};

void masked_gradient_bits_cuda(const Tensor& dy, const Tensor& bits, const Tensor& dx) {
  cuda::for_each_index(kOp, dx.device(), dx.numel(),
                       MaskedBitsGradient{dy.data_ptr<float>(), bits.data_ptr<std::uint8_t>(),
                                          dx.data_ptr<float>()});
}

}  // namespace

void register_fused_obs_fake_quant_cuda_kernels(KernelRegistry& r) {
  r.table(kFusedObsFakeQuantKernels)
      .define(DeviceType::CUDA, &fused_moving_avg_obs_fake_quant_cuda, DTypeSet{kFloat32});
  r.table(kMaskedGradientBitsKernels)
      .define(DeviceType::CUDA, &masked_gradient_bits_cuda, DTypeSet{kFloat32});
}

}  // namespace qgrad::ao
