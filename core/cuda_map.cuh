// cuda::map, the one element-wise driver of the CUDA kernels: out[i] = f(in_0[i], ..., in_k[i])
// over out's shape as a grid-stride loop on the device's stream. Dimensions are coalesced on the
// host exactly as the CPU's StridedLoop does; all-contiguous operands take a kernel that indexes
// directly, anything else one that turns the linear index into per-operand offsets. `f` is the
// QGRAD_HD functor from a <family>_elem.h header that cpu::map runs on the CPU, so both devices
// compute the same bits (FMA contraction is off: --fmad=false). map_outputs writes several
// outputs in one pass, as cpu::map_outputs. Only .cu files include this.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "core/cuda_check.h"
#include "core/cuda_stream.h"
#include "core/host_device.h"
#include "core/map_outputs.h"
#include "core/strided_loop.h"
#include "core/tensor.h"

namespace qgrad::cuda {

// After coalescing, a tensor with more dims than this is refused (no real model comes close).
inline constexpr int kMaxMapDims = 10;

// Per-operand element offsets of a linear index over the coalesced shape.
template <int N>
struct StridedIndexer {
  int ndim = 0;
  std::int64_t sizes[kMaxMapDims] = {};
  std::int64_t strides[N][kMaxMapDims] = {};

  QGRAD_HD void offsets(std::int64_t linear, std::int64_t (&off)[N]) const {
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const std::int64_t i = linear % sizes[d];
      linear /= sizes[d];
      for (int k = 0; k < N; ++k) off[k] += i * strides[k][d];
    }
  }
};

// The input pointers of one launch as a recursive struct: a __global__ template may have only
// one parameter pack, and it must come last, so the kernels take the inputs as one value.
template <typename... Ts>
struct Inputs {};
template <typename T, typename... Rest>
struct Inputs<T, Rest...> {
  const T* head;
  Inputs<Rest...> tail;
};
template <typename... Ts>
Inputs<Ts...> make_inputs(const Ts*... p) {
  return Inputs<Ts...>{p...};
}
template <typename T, typename... Rest>
Inputs<T, Rest...> make_inputs(const T* head, const Rest*... rest) {
  return Inputs<T, Rest...>{head, make_inputs(rest...)};
}

// f(in_0[off[0]], in_1[off[1]], ...), the arguments gathered one input at a time.
template <typename F, typename... Args>
__device__ __forceinline__ auto apply_at(const F& f, const Inputs<>&, const std::int64_t*,
                                         Args... args) {
  return f(args...);
}
template <typename F, typename T, typename... Rest, typename... Args>
__device__ __forceinline__ auto apply_at(const F& f, const Inputs<T, Rest...>& in,
                                         const std::int64_t* off, Args... args) {
  return apply_at(f, in.tail, off + 1, args..., in.head[off[0]]);
}
// f(in_0[i], in_1[i], ...).
template <typename F, typename... Args>
__device__ __forceinline__ auto apply_linear(const F& f, const Inputs<>&, std::int64_t,
                                             Args... args) {
  return f(args...);
}
template <typename F, typename T, typename... Rest, typename... Args>
__device__ __forceinline__ auto apply_linear(const F& f, const Inputs<T, Rest...>& in,
                                             std::int64_t i, Args... args) {
  return apply_linear(f, in.tail, i, args..., in.head[i]);
}

template <typename R, typename F, typename In>
__global__ void map_contiguous_kernel(F f, std::int64_t n, R* out, In in) {
  const std::int64_t step = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += step)
    out[i] = apply_linear(f, in, i);
}

template <typename R, typename F, typename In, int N>
__global__ void map_strided_kernel(F f, std::int64_t n, StridedIndexer<N> ix, R* out, In in) {
  const std::int64_t step = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += step) {
    std::int64_t off[N];
    ix.offsets(i, off);
    out[off[0]] = apply_at(f, in, off + 1);
  }
}

// Threads per block and a grid bounded so that the grid-stride loop does the rest.
inline constexpr int kMapThreads = 256;
inline int map_blocks(std::int64_t n) {
  return static_cast<int>(std::min<std::int64_t>((n + kMapThreads - 1) / kMapThreads, 1 << 16));
}

// out[i] = f(in[i]...) for every element of out, on out's device and stream. R is out's element
// type and Ts... the inputs' (given explicitly, as cpu::map); the inputs are views of out's shape
// (stride 0 on broadcast dims) on out's device. `op` names the op in errors.
template <typename R, typename... Ts, typename F, typename... Tensors>
void map(const char* op, const F& f, const Tensor& out, const Tensors&... in) {
  static_assert(sizeof...(Ts) == sizeof...(Tensors), "one element type per input tensor");
  constexpr int N = 1 + static_cast<int>(sizeof...(Ts));
  const std::int64_t n = out.numel();
  if (n == 0) return;
  const int device = out.device().index;
  const CudaDeviceGuard guard(device);  // launch on the stream's own device
  cudaStream_t stream = cuda_stream(device);
  R* po = static_cast<R*>(out.raw_data());
  const auto pin = make_inputs(static_cast<const Ts*>(in.raw_data())...);
  const bool contiguous = out.is_contiguous() && (in.is_contiguous() && ...);
  if (contiguous) {
    map_contiguous_kernel<<<map_blocks(n), kMapThreads, 0, stream>>>(f, n, po, pin);
  } else {
    const StridedLoop<N> loop(out.shape(), {out.strides(), in.strides()...}, {});
    const int nd = static_cast<int>(loop.shape.size());
    QGRAD_CHECK(nd <= kMaxMapDims, ShapeError, op, ": a CUDA element-wise kernel takes at most ",
                kMaxMapDims, " dims after merging contiguous ones, got ", nd, " (shape ",
                out.shape(), ")");
    StridedIndexer<N> ix;
    ix.ndim = nd;
    for (int d = 0; d < nd; ++d) {
      ix.sizes[d] = loop.shape[d];
      for (int k = 0; k < N; ++k) ix.strides[k][d] = loop.strides[k][d];
    }
    map_strided_kernel<<<map_blocks(n), kMapThreads, 0, stream>>>(f, n, ix, po, pin);
  }
  QGRAD_CUDA_CHECK(cudaGetLastError(), op, "element-wise kernel launch, shape ", out.shape());
}

// The outputs after the first of map_outputs, as Inputs but writable.
template <typename... Rs>
struct OutPtrs {};
template <typename R, typename... Rest>
struct OutPtrs<R, Rest...> {
  R* head;
  OutPtrs<Rest...> tail;
};
template <typename... Rs>
OutPtrs<Rs...> make_outputs(Rs*... p) {
  return OutPtrs<Rs...>{p...};
}
template <typename R, typename... Rest>
OutPtrs<R, Rest...> make_outputs(R* head, Rest*... rest) {
  return OutPtrs<R, Rest...>{head, make_outputs(rest...)};
}

// f(in_0[in_off[0]], ..., out_1[out_off[0]], ...): the inputs' values, then the later outputs
// as references.
template <typename F, typename... Args>
__device__ __forceinline__ auto gather_outputs(const F& f, const OutPtrs<>&, const std::int64_t*,
                                               Args&&... args) {
  return f(static_cast<Args&&>(args)...);
}
template <typename F, typename R, typename... Rest, typename... Args>
__device__ __forceinline__ auto gather_outputs(const F& f, const OutPtrs<R, Rest...>& o,
                                               const std::int64_t* off, Args&&... args) {
  return gather_outputs(f, o.tail, off + 1, static_cast<Args&&>(args)..., o.head[off[0]]);
}
template <typename F, typename Outs, typename... Args>
__device__ __forceinline__ auto gather_inputs(const F& f, const Inputs<>&, const std::int64_t*,
                                              const Outs& outs, const std::int64_t* out_off,
                                              Args&&... args) {
  return gather_outputs(f, outs, out_off, static_cast<Args&&>(args)...);
}
template <typename F, typename T, typename... Rest, typename Outs, typename... Args>
__device__ __forceinline__ auto gather_inputs(const F& f, const Inputs<T, Rest...>& in,
                                              const std::int64_t* off, const Outs& outs,
                                              const std::int64_t* out_off, Args&&... args) {
  return gather_inputs(f, in.tail, off + 1, outs, out_off, static_cast<Args&&>(args)...,
                       in.head[off[0]]);
}

// Offsets: [0] the first output, [1, K) the later outputs, [K, N) the inputs.
template <int K, int N, bool Contiguous, typename R0, typename F, typename Outs, typename In>
__global__ void map_outputs_kernel(F f, std::int64_t n, StridedIndexer<N> ix, R0* out, Outs outs,
                                   In in) {
  const std::int64_t step = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += step) {
    std::int64_t off[N];
    if constexpr (Contiguous) {
      for (int k = 0; k < N; ++k) off[k] = i;
    } else {
      ix.offsets(i, off);
    }
    out[off[0]] = gather_inputs(f, in, off + K, outs, off + 1);
  }
}

namespace detail {

template <typename... Ts, typename F, typename R0, typename... Rs, std::size_t... J,
          typename... Tensors>
void map_outputs_launch(const char* op, Outputs<R0, Rs...>, const F& f,
                        const std::array<Tensor, 1 + sizeof...(Rs)>& outs,
                        std::index_sequence<J...>, const Tensors&... in) {
  constexpr int K = 1 + static_cast<int>(sizeof...(Rs));
  constexpr int N = K + static_cast<int>(sizeof...(Ts));
  const Tensor& out = outs[0];
  const std::int64_t n = out.numel();
  if (n == 0) return;
  const int device = out.device().index;
  const CudaDeviceGuard guard(device);
  cudaStream_t stream = cuda_stream(device);
  R0* po = static_cast<R0*>(out.raw_data());
  const auto pout = make_outputs(static_cast<Rs*>(outs[J + 1].raw_data())...);
  const auto pin = make_inputs(static_cast<const Ts*>(in.raw_data())...);
  bool contiguous = (in.is_contiguous() && ... && true);
  for (const Tensor& o : outs) contiguous = contiguous && o.is_contiguous();
  StridedIndexer<N> ix;
  if (contiguous) {
    map_outputs_kernel<K, N, true>
        <<<map_blocks(n), kMapThreads, 0, stream>>>(f, n, ix, po, pout, pin);
  } else {
    const StridedLoop<N> loop(out.shape(),
                              {out.strides(), outs[J + 1].strides()..., in.strides()...}, {});
    const int nd = static_cast<int>(loop.shape.size());
    QGRAD_CHECK(nd <= kMaxMapDims, ShapeError, op, ": a CUDA element-wise kernel takes at most ",
                kMaxMapDims, " dims after merging contiguous ones, got ", nd, " (shape ",
                out.shape(), ")");
    ix.ndim = nd;
    for (int d = 0; d < nd; ++d) {
      ix.sizes[d] = loop.shape[d];
      for (int k = 0; k < N; ++k) ix.strides[k][d] = loop.strides[k][d];
    }
    map_outputs_kernel<K, N, false>
        <<<map_blocks(n), kMapThreads, 0, stream>>>(f, n, ix, po, pout, pin);
  }
  QGRAD_CUDA_CHECK(cudaGetLastError(), op, "element-wise kernel launch, shape ", out.shape());
}

}  // namespace detail

// Several outputs in one pass (see cpu::map_outputs): outs[0][i] = f(in[i]..., outs[1][i], ...),
// on outs[0]'s device and stream.
template <typename Outs, typename... Ts, typename F, typename... Tensors>
void map_outputs(const char* op, const F& f, const std::array<Tensor, Outs::size>& outs,
                 const Tensors&... in) {
  static_assert(sizeof...(Ts) == sizeof...(Tensors), "one element type per input tensor");
  detail::map_outputs_launch<Ts...>(op, Outs{}, f, outs, std::make_index_sequence<Outs::size - 1>{},
                                    in...);
}

template <typename F>
__global__ void for_each_kernel(F f, std::int64_t n) {
  const std::int64_t step = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += step)
    f(i);
}

// f(i) for i in [0, n) on `device`'s stream (see cpu::for_each_index).
template <typename F>
void for_each_index(const char* op, Device device, std::int64_t n, const F& f) {
  if (n == 0) return;
  const CudaDeviceGuard guard(device.index);
  for_each_kernel<<<map_blocks(n), kMapThreads, 0, cuda_stream(device.index)>>>(f, n);
  QGRAD_CUDA_CHECK(cudaGetLastError(), op, "kernel launch over ", n, " elements");
}

// The CUDA driver as a type (see cpu::Map): Map::run<R, Ts...>(op, f, out, in...).
struct Map {
  static constexpr bool kHostMemory = false;  // the host may read the tensors' bytes
  template <typename R, typename... Ts, typename F, typename... Tensors>
  static void run(const char* op, const F& f, const Tensor& out, const Tensors&... in) {
    map<R, Ts...>(op, f, out, in...);
  }
  template <typename Outs, typename... Ts, typename F, typename... Tensors>
  static void run_outputs(const char* op, const F& f, const std::array<Tensor, Outs::size>& outs,
                          const Tensors&... in) {
    map_outputs<Outs, Ts...>(op, f, outs, in...);
  }
  template <typename F>
  static void for_each(const char* op, Device device, std::int64_t n, const F& f) {
    for_each_index(op, device, n, f);
  }
};

}  // namespace qgrad::cuda
