// CUDA kernels of the NVIDIA quantizers: one thread per element, which finds its block's grid
// entry from the BlockLayout (BlockIndexer: the coalesced multi-index, each coordinate divided by
// its block size) and runs tensor_quant_elem.h's element, the CPU's; the per-block max |x| of the
// calibrators by an atomic max on the bits of non-negative floats (exact and order-free, so
// deterministic); registered in the "nvidia.*" tables.
#include <cstdint>
#include <limits>

#include "core/cuda_check.h"
#include "core/cuda_map.cuh"
#include "core/dtype.h"
#include "core/factory.h"
#include "ops/reduce/reduce.h"
#include "quant/nvidia/tensor_quant.h"  // kMinAmax
#include "quant/nvidia/tensor_quant_elem.h"
#include "quant/nvidia/tensor_quant_kernels.h"

namespace qgrad::nvidia {

namespace {

constexpr int kMaxBlockDims = 12;

// The grid entry of flat element i of a contiguous tensor laid out by a BlockLayout.
struct BlockIndexer {
  int nd = 0;
  std::int64_t dims[kMaxBlockDims] = {};
  std::int64_t block[kMaxBlockDims] = {};
  std::int64_t grid_strides[kMaxBlockDims] = {};
  __device__ std::int64_t operator()(std::int64_t i) const {
    std::int64_t g = 0;
    for (int k = nd - 1; k >= 0; --k) {
      const std::int64_t idx = i % dims[k];
      i /= dims[k];
      g += (idx / block[k]) * grid_strides[k];
    }
    return g;
  }
};

BlockIndexer indexer_of(const char* op, const BlockLayout& L) {
  QGRAD_CHECK(L.dims.size() <= static_cast<std::size_t>(kMaxBlockDims), ShapeError, op,
              ": a block layout of ", L.dims.size(), " coalesced dims (at most ", kMaxBlockDims,
              " on the GPU)");
  BlockIndexer b;
  b.nd = static_cast<int>(L.dims.size());
  for (std::size_t k = 0; k < L.dims.size(); ++k) {
    b.dims[k] = L.dims[k];
    b.block[k] = L.block[k];
    b.grid_strides[k] = L.grid_strides[k];
  }
  return b;
}

template <typename T>
struct IntQuantAt {
  const T *x, *sq, *sd;
  T* out;
  BlockIndexer at;
  IntQuantElem<T> e;
  bool fake;
  __device__ void operator()(std::int64_t i) const {
    const std::int64_t g = at(i);
    out[i] = fake ? e.fake(x[i], sq[g], sd[g]) : e(x[i], sq[g]);
  }
};

template <typename T>
struct FpScaledAt {
  const T *x, *s, *d;
  T* out;
  BlockIndexer at;
  FpScaledElem<T> e;
  __device__ void operator()(std::int64_t i) const {
    const std::int64_t g = at(i);
    out[i] = e(x[i], s[g], d[g]);
  }
};

template <typename T>
struct FpDivmulAt {
  const T *x, *s;
  T* out;
  BlockIndexer at;
  FpDivmulElem<T> e;
  __device__ void operator()(std::int64_t i) const { out[i] = e(x[i], s[at(i)]); }
};

template <typename T>
struct ClipSteAt {
  const T *dy, *x, *amax;
  T* gx;
  BlockIndexer at;
  __device__ void operator()(std::int64_t i) const {
    gx[i] = clip_ste_grad(dy[i], x[i], amax[at(i)]);
  }
};

// The bits of a non-negative float order as the values do: an atomic max on them is the max.
__device__ inline void atomic_max_nonnegative(float* p, float v) {
  atomicMax(reinterpret_cast<unsigned int*>(p), __float_as_uint(v));
}
__device__ inline void atomic_max_nonnegative(double* p, double v) {
  atomicMax(reinterpret_cast<unsigned long long*>(p),
            static_cast<unsigned long long>(__double_as_longlong(v)));
}

template <typename T>
struct AbsmaxAt {
  const T* x;
  T* grid;
  int* nonfinite;
  BlockIndexer at;
  __device__ void operator()(std::int64_t i) const {
    bool bad = false;
    const T v = finite_absmax_step(T(0), x[i], bad);
    if (bad) *nonfinite = 1;  // every writer stores 1: no race on the value
    if (v > T(0)) atomic_max_nonnegative(grid + at(i), v);
  }
};

template <typename T>
struct NegativeAt {
  const T* x;
  int* found;
  __device__ void operator()(std::int64_t i) const {
    if (x[i] < T(0)) *found = 1;
  }
};

void int_quant_cuda(const Tensor& x, const Tensor& out, const BlockLayout& L, const Tensor& sq,
                    const Tensor& sd, double lo, double hi, bool fake) {
  QGRAD_DISPATCH_FLOAT(x.dtype(), "int_quant_cuda", [&] {
    using T = scalar_t;
    cuda::for_each_index(
        "int_quant", x.device(), x.numel(),
        IntQuantAt<T>{x.data_ptr<T>(), sq.data_ptr<T>(), sd.data_ptr<T>(), out.data_ptr<T>(),
                      indexer_of("int_quant", L),
                      IntQuantElem<T>{static_cast<T>(lo), static_cast<T>(hi)}, fake});
  });
}

void fp_scaled_quant_cuda(const Tensor& x, const Tensor& out, const BlockLayout& L, const Tensor& s,
                          const Tensor& d, const MiniFloatSpec& fmt, bool zero_small, bool fake) {
  QGRAD_DISPATCH_FLOAT(x.dtype(), "fp_scaled_quant_cuda", [&] {
    using T = scalar_t;
    const FpScaledElem<T> e{MiniFloatCaster<T>(fmt),
                            zero_small ? static_cast<T>(1.0 / (1 << 24)) : T(0), fake};
    cuda::for_each_index("fp_scaled_quant", x.device(), x.numel(),
                         FpScaledAt<T>{x.data_ptr<T>(), s.data_ptr<T>(), d.data_ptr<T>(),
                                       out.data_ptr<T>(), indexer_of("fp_scaled_quant", L), e});
  });
}

void fp_divmul_quant_cuda(const Tensor& x, const Tensor& out, const BlockLayout& L, const Tensor& s,
                          const MiniFloatSpec& fmt, bool fake) {
  QGRAD_DISPATCH_FLOAT(x.dtype(), "fp_divmul_quant_cuda", [&] {
    using T = scalar_t;
    cuda::for_each_index("fp_divmul_quant", x.device(), x.numel(),
                         FpDivmulAt<T>{x.data_ptr<T>(), s.data_ptr<T>(), out.data_ptr<T>(),
                                       indexer_of("fp_divmul_quant", L),
                                       FpDivmulElem<T>{MiniFloatCaster<T>(fmt), fake}});
  });
}

void clip_ste_backward_cuda(const Tensor& dy, const Tensor& x, const Tensor& gx,
                            const BlockLayout& L, const Tensor& amax) {
  QGRAD_DISPATCH_FLOAT(x.dtype(), "clip_ste_backward_cuda", [&] {
    using T = scalar_t;
    cuda::for_each_index("clip_ste_backward", x.device(), x.numel(),
                         ClipSteAt<T>{dy.data_ptr<T>(), x.data_ptr<T>(), amax.data_ptr<T>(),
                                      gx.data_ptr<T>(), indexer_of("clip_ste_backward", L)});
  });
}

// The grid arrives zeroed (block_absmax); the flag is read on the host (calibration, not a step).
bool block_absmax_cuda(const Tensor& x, const BlockLayout& L, const Tensor& grid) {
  const Tensor flag = zeros({1}, TensorOptions().dtype(kInt32).device(x.device()));
  QGRAD_DISPATCH_FLOAT(x.dtype(), "block_absmax_cuda", [&] {
    using T = scalar_t;
    cuda::for_each_index("block_absmax", x.device(), x.numel(),
                         AbsmaxAt<T>{x.data_ptr<T>(), grid.data_ptr<T>(), flag.data_ptr<int>(),
                                     indexer_of("block_absmax", L)});
  });
  return flag.item<int>() != 0;
}

// Read on the host: unsigned quantization's check (the fronts use it on the CPU and in
// calibration; a GPU training step checks with check_nonnegative_cuda instead).
bool any_negative_cuda(const Tensor& x) {
  const Tensor flag = zeros({1}, TensorOptions().dtype(kInt32).device(x.device()));
  QGRAD_DISPATCH_FLOAT(x.dtype(), "any_negative_cuda", [&] {
    using T = scalar_t;
    cuda::for_each_index("any_negative", x.device(), x.numel(),
                         NegativeAt<T>{x.data_ptr<T>(), flag.data_ptr<int>()});
  });
  return flag.item<int>() != 0;
}

void amax_scales_cuda(const Tensor& amax, double bound, const Tensor& quant_scale,
                      const Tensor& dequant_scale) {
  QGRAD_DISPATCH_FLOAT(amax.dtype(), "amax_scales_cuda", [&] {
    using T = scalar_t;
    cuda::map_outputs<Outputs<T, T>, T>(
        "amax_scales", AmaxScalesElem<T>{static_cast<T>(bound), static_cast<T>(kMinAmax)},
        {quant_scale, dequant_scale}, amax);
  });
}

void affine_fake_quant_cuda(const Tensor& x, const Tensor& out, double step, double qz, double lo,
                            double hi) {
  QGRAD_DISPATCH_FLOAT(x.dtype(), "affine_fake_quant_cuda", [&] {
    using T = scalar_t;
    cuda::map<T, T>("fake_affine_tensor_quant",
                    AffineFakeQuantElem<T>{static_cast<T>(step), static_cast<T>(qz),
                                           static_cast<T>(lo), static_cast<T>(hi)},
                    out, x);
  });
}

void range_ste_backward_cuda(const Tensor& dy, const Tensor& x, const Tensor& gx, double lo,
                             double hi) {
  QGRAD_DISPATCH_FLOAT(x.dtype(), "range_ste_backward_cuda", [&] {
    using T = scalar_t;
    cuda::map<T, T, T>("fake_affine_tensor_quant backward",
                       RangeSteGradElem<T>{static_cast<T>(lo), static_cast<T>(hi)}, gx, dy, x);
  });
}

}  // namespace

void register_tensor_quant_cuda_kernels(KernelRegistry& r) {
  r.table(kIntQuantKernels).define(DeviceType::CUDA, &int_quant_cuda, kFloatingDTypes);
  r.table(kFpScaledQuantKernels).define(DeviceType::CUDA, &fp_scaled_quant_cuda, kFloatingDTypes);
  r.table(kFpDivmulQuantKernels).define(DeviceType::CUDA, &fp_divmul_quant_cuda, kFloatingDTypes);
  r.table(kClipSteBackwardKernels)
      .define(DeviceType::CUDA, &clip_ste_backward_cuda, kFloatingDTypes);
  r.table(kBlockAbsmaxKernels).define(DeviceType::CUDA, &block_absmax_cuda, kFloatingDTypes);
  r.table(kAnyNegativeKernels).define(DeviceType::CUDA, &any_negative_cuda, kFloatingDTypes);
  r.table(kAmaxScalesKernels).define(DeviceType::CUDA, &amax_scales_cuda, kFloatingDTypes);
  r.table(kAffineFakeQuantKernels)
      .define(DeviceType::CUDA, &affine_fake_quant_cuda, kFloatingDTypes);
  r.table(kRangeSteBackwardKernels)
      .define(DeviceType::CUDA, &range_ste_backward_cuda, kFloatingDTypes);
}

}  // namespace qgrad::nvidia
