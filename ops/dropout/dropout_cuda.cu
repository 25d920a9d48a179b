// CUDA dropout: one thread per group of four consecutive elements, which share one Philox block
// (philox4x32_10 is host/device), so each element gets exactly the random word the CPU kernel
// gives it and the same seed and offset draw the same mask on both devices (dropout_elem.h's
// keep rule). A strided input is first copied to contiguous.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda_map.cuh"
#include "core/generator.h"
#include "ops/dropout/dropout_elem.h"
#include "ops/dropout/dropout_kernels.h"

namespace qgrad {

namespace {

template <typename T>
struct DropoutGroup {
  const T* in;  // contiguous
  T* out;
  std::int64_t n;
  std::uint64_t seed, first_block;
  std::uint32_t threshold;
  T scale;
  __device__ void operator()(std::int64_t group) const {
    const PhiloxBlock b = philox4x32_10(seed, first_block + static_cast<std::uint64_t>(group));
    const std::int64_t i0 = group * 4;
    for (int k = 0; k < 4 && i0 + k < n; ++k)
      out[i0 + k] = dropout_elem::keeps(b.v[k], threshold) ? in[i0 + k] * scale : T(0);
  }
};

void dropout_cuda(const Tensor& in, const DropoutMask& mask, const Tensor& out) {
  const std::int64_t n = out.numel();
  if (n == 0) return;
  QGRAD_CHECK(out.is_contiguous(), Error, "dropout: output buffer must be contiguous");
  const Tensor x = in.contiguous();
  QGRAD_DISPATCH_FLOAT(in.dtype(), "dropout", [&] {
    using T = scalar_t;
    cuda::for_each_index(
        "dropout", out.device(), (n + 3) / 4,
        DropoutGroup<T>{static_cast<const T*>(x.raw_data()), static_cast<T*>(out.raw_data()), n,
                        mask.gen.seed(), mask.first_block, dropout_elem::threshold(mask.p),
                        dropout_elem::scale<T>(mask.p)});
  });
}

}  // namespace

void register_dropout_cuda_kernels(KernelRegistry& r) {
  r.table(kDropoutKernels).define(DeviceType::CUDA, &dropout_cuda, kFloatingDTypes);
}

}  // namespace qgrad
