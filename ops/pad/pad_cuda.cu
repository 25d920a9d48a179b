// CUDA padding: one thread per output element (grid-stride, cuda::for_each_index). Forward maps
// each output index through pad_elem.h's rule, dim by dim, to its source element (or the fill
// value). The backward of the index-mapping modes adds every gradient element into its source
// element with atomicAdd: several outputs may share a source (reflect, replicate, circular),
// so the summation order, and the last bits of float sums, vary from run to run.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda_map.cuh"
#include "ops/pad/pad_elem.h"
#include "ops/pad/pad_kernels.h"

namespace qgrad {

namespace {

constexpr int kMaxPadDims = 16;

// PadPlan in fixed arrays (a kernel argument), with the strides of the gathered-from tensor
// (`src`) and of the indexed-by-output tensor (`dst`).
struct PadGeometry {
  int nd = 0;
  PadMode mode = PadMode::Constant;
  std::int64_t in[kMaxPadDims] = {}, out[kMaxPadDims] = {};
  std::int64_t left[kMaxPadDims] = {}, right[kMaxPadDims] = {};
  std::int64_t src_strides[kMaxPadDims] = {}, dst_strides[kMaxPadDims] = {};

  // Offsets of output element `linear` in dst and of its source in src; false in a border.
  __device__ bool offsets(std::int64_t linear, std::int64_t& dst, std::int64_t& src) const {
    dst = 0;
    src = 0;
    bool inside = true;
    for (int d = nd - 1; d >= 0; --d) {
      const std::int64_t o = linear % out[d];
      linear /= out[d];
      dst += o * dst_strides[d];
      const std::int64_t s = pad_elem::source_index(mode, in[d], left[d], right[d], o);
      if (s < 0) inside = false;
      src += s * src_strides[d];
    }
    return inside;
  }
};

PadGeometry make_geometry(const char* op, const PadPlan& p, const Shape& src_strides,
                          const Shape& dst_strides) {
  const std::size_t nd = p.out_shape.size();
  QGRAD_CHECK(nd <= static_cast<std::size_t>(kMaxPadDims), ShapeError, op,
              ": the CUDA kernel takes at most ", kMaxPadDims, " dims, got ", nd);
  PadGeometry g;
  g.nd = static_cast<int>(nd);
  g.mode = p.mode;
  for (std::size_t d = 0; d < nd; ++d) {
    g.in[d] = p.in_shape[d];
    g.out[d] = p.out_shape[d];
    g.left[d] = p.left[d];
    g.right[d] = p.right[d];
    g.src_strides[d] = src_strides[d];
    g.dst_strides[d] = dst_strides[d];
  }
  return g;
}

template <typename T>
struct PadForward {
  PadGeometry g;
  const T* x;
  T* out;
  T value;
  __device__ void operator()(std::int64_t i) const {
    std::int64_t dst, src;
    out[i] = g.offsets(i, dst, src) ? x[src] : value;  // out contiguous: dst == i
  }
};

template <typename T>
struct PadBackward {
  PadGeometry g;  // src: grad_in's strides, dst: g's
  const T* grad;
  T* grad_in;
  __device__ void operator()(std::int64_t i) const {
    std::int64_t dst, src;
    if (g.offsets(i, dst, src)) atomicAdd(grad_in + src, grad[dst]);
  }
};

void pad_cuda(const Tensor& x, const PadPlan& plan, double value, const Tensor& out) {
  if (out.numel() == 0) return;
  QGRAD_CHECK(out.is_contiguous(), Error, "pad: output buffer must be contiguous");
  const PadGeometry g = make_geometry("pad", plan, x.strides(), out.strides());
  QGRAD_DISPATCH_ALL(x.dtype(), "pad", [&] {
    using T = scalar_t;
    cuda::for_each_index("pad", out.device(), out.numel(),
                         PadForward<T>{g, static_cast<const T*>(x.raw_data()),
                                       static_cast<T*>(out.raw_data()), static_cast<T>(value)});
  });
}

void pad_backward_cuda(const Tensor& g, const PadPlan& plan, const Tensor& grad_in) {
  if (g.numel() == 0) return;
  const PadGeometry geo = make_geometry("pad backward", plan, grad_in.strides(), g.strides());
  QGRAD_DISPATCH_FLOAT(g.dtype(), "pad backward", [&] {
    using T = scalar_t;
    cuda::for_each_index("pad backward", g.device(), g.numel(),
                         PadBackward<T>{geo, static_cast<const T*>(g.raw_data()),
                                        static_cast<T*>(grad_in.raw_data())});
  });
}

}  // namespace

void register_pad_cuda_kernels(KernelRegistry& r) {
  r.table<PadKernel>("pad").define(DeviceType::CUDA, &pad_cuda, kAllDTypes);
  r.table<PadBackwardKernel>("pad_backward")
      .define(DeviceType::CUDA, &pad_backward_cuda, kFloatingDTypes);
}

}  // namespace qgrad
