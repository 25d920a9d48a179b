// CUDA padding (grid-stride, cuda::for_each_index). Forward: one thread per output element, which
// maps its index through pad_elem.h's rule, dim by dim, to its source element (or the fill
// value). The backward of the index-mapping modes: one thread per input element, which gathers
// the gradients of the outputs copied from it (several share a source in reflect, replicate and
// circular modes) in ascending output order, as the CPU's scatter adds them: no atomics, so the
// same bits as the CPU on every run.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda_map.cuh"
#include "ops/pad/pad_elem.h"
#include "ops/pad/pad_kernels.h"

namespace qgrad {

namespace {

using pad_elem::PadGeometry;

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
  PadGeometry g;  // src: grad_in's strides (contiguous), dst: g's
  const T* grad;
  T* grad_in;
  __device__ void operator()(std::int64_t i) const { grad_in[i] += g.gather(grad, i); }
};

void pad_cuda(const Tensor& x, const PadPlan& plan, double value, const Tensor& out) {
  if (out.numel() == 0) return;
  QGRAD_CHECK(out.is_contiguous(), Error, "pad: output buffer must be contiguous");
  const PadGeometry g = pad_elem::make_geometry("pad", plan, x.strides(), out.strides());
  QGRAD_DISPATCH_ALL(x.dtype(), "pad", [&] {
    using T = scalar_t;
    cuda::for_each_index("pad", out.device(), out.numel(),
                         PadForward<T>{g, static_cast<const T*>(x.raw_data()),
                                       static_cast<T*>(out.raw_data()), static_cast<T>(value)});
  });
}

void pad_backward_cuda(const Tensor& g, const PadPlan& plan, const Tensor& grad_in) {
  if (grad_in.numel() == 0) return;
  QGRAD_CHECK(grad_in.is_contiguous(), Error, "pad backward: gradient buffer must be contiguous");
  const PadGeometry geo =
      pad_elem::make_geometry("pad backward", plan, grad_in.strides(), g.strides());
  QGRAD_DISPATCH_FLOAT(g.dtype(), "pad backward", [&] {
    using T = scalar_t;
    cuda::for_each_index("pad backward", g.device(), grad_in.numel(),
                         PadBackward<T>{geo, static_cast<const T*>(g.raw_data()),
                                        static_cast<T*>(grad_in.raw_data())});
  });
}

}  // namespace

void register_pad_cuda_kernels(KernelRegistry& r) {
  r.table(kPadKernels).define(DeviceType::CUDA, &pad_cuda, kAllDTypes);
  r.table(kPadBackwardKernels).define(DeviceType::CUDA, &pad_backward_cuda, kFloatingDTypes);
}

}  // namespace qgrad
