// 2-D pooling ops: argument checks, unbatched-input handling, kernel dispatch and the backward
// rules (max pooling keeps the forward's workspace so backward routes each gradient to the
// element that won the window).
#include "ops/pool/pool.h"

#include "core/autograd/function.h"
#include "core/factory.h"
#include "ops/device_check.h"
#include "ops/pool/pool_geometry.h"
#include "ops/pool/pool_kernels.h"

namespace qgrad {

namespace {

void check_input(const char* op, const Tensor& x) {
  require_floating(op, "input", x);
  QGRAD_CHECK(x.dim() == 3 || x.dim() == 4, ShapeError, op,
              ": expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape ", x.shape());
}

TensorOptions like(const Tensor& x) {
  return TensorOptions().dtype(x.dtype()).device(x.device());
}

// The kernels read contiguous [N, C, H, W] data; detach so the copy is not recorded.
Tensor contiguous_data(const Tensor& x) {
  return x.detach().contiguous();
}

}  // namespace

Tensor max_pool2d(const Tensor& x, const Shape& kernel_size, const Shape& stride,
                  const Shape& padding, const Shape& dilation, bool ceil_mode) {
  const char* op = "max_pool2d";
  check_input(op, x);
  if (x.dim() == 3)
    return max_pool2d(x.unsqueeze(0), kernel_size, stride, padding, dilation, ceil_mode).squeeze(0);
  const Pool2dGeometry g =
      make_pool2d_geometry(op, x.shape(), kernel_size, stride, padding, dilation, ceil_mode);
  Tensor out = empty({g.n, g.c, g.oh, g.ow}, like(x));
  const bool grad = needs_grad({x});
  static const KernelTable<MaxPool2dKernel>& forward = kernel_table(kMaxPool2dKernels);
  Tensor workspace = forward(op, x)(contiguous_data(x), out, g, grad);
  if (grad) {
    const TensorOptions opts = like(x);
    record("MaxPool2DBackward", {x}, {&out}, [g, workspace, opts](const TensorList& gr) {
      Tensor gx = empty({g.n, g.c, g.ih, g.iw}, opts);
      static const KernelTable<MaxPool2dBackwardKernel>& backward =
          kernel_table(kMaxPool2dBackwardKernels);
      backward("max_pool2d backward", gr[0])(gr[0].contiguous(), workspace, gx, g);
      return TensorList{gx};
    });
  }
  return out;
}

Tensor avg_pool2d(const Tensor& x, const Shape& kernel_size, const Shape& stride,
                  const Shape& padding, bool ceil_mode, bool count_include_pad,
                  std::optional<std::int64_t> divisor_override) {
  const char* op = "avg_pool2d";
  check_input(op, x);
  QGRAD_CHECK(!divisor_override || *divisor_override > 0, ValueError, op,
              ": divisor_override must be positive, got ", divisor_override.value_or(0));
  if (x.dim() == 3)
    return avg_pool2d(x.unsqueeze(0), kernel_size, stride, padding, ceil_mode, count_include_pad,
                      divisor_override)
        .squeeze(0);
  const Pool2dGeometry g =
      make_pool2d_geometry(op, x.shape(), kernel_size, stride, padding, {1}, ceil_mode);
  const std::int64_t divisor = divisor_override.value_or(0);
  Tensor out = empty({g.n, g.c, g.oh, g.ow}, like(x));
  static const KernelTable<AvgPool2dKernel>& forward = kernel_table(kAvgPool2dKernels);
  forward(op, x)(contiguous_data(x), out, g, count_include_pad, divisor);
  if (needs_grad({x})) {
    const TensorOptions opts = like(x);
    record("AvgPool2DBackward", {x}, {&out},
           [g, opts, count_include_pad, divisor](const TensorList& gr) {
             Tensor gx = empty({g.n, g.c, g.ih, g.iw}, opts);
             static const KernelTable<AvgPool2dBackwardKernel>& backward =
                 kernel_table(kAvgPool2dBackwardKernels);
             backward("avg_pool2d backward", gr[0])(gr[0].contiguous(), gx, g, count_include_pad,
                                                    divisor);
             return TensorList{gx};
           });
  }
  return out;
}

Tensor adaptive_avg_pool2d(const Tensor& x, const Shape& output_size) {
  const char* op = "adaptive_avg_pool2d";
  check_input(op, x);
  QGRAD_CHECK(output_size.size() == 1 || output_size.size() == 2, ValueError, op,
              ": output_size must have 1 or 2 values ({oh, ow}), got ", output_size);
  const std::int64_t oh = output_size[0], ow = output_size.back();
  QGRAD_CHECK(oh > 0 && ow > 0, ValueError, op, ": output_size must be positive, got ",
              output_size);
  if (x.dim() == 3) return adaptive_avg_pool2d(x.unsqueeze(0), output_size).squeeze(0);
  QGRAD_CHECK(x.size(1) > 0 && x.size(2) > 0 && x.size(3) > 0, ShapeError, op,
              ": channel and spatial sizes must be non-zero, got input shape ", x.shape());
  Tensor out = empty({x.size(0), x.size(1), oh, ow}, like(x));
  static const KernelTable<AdaptiveAvgPool2dKernel>& forward =
      kernel_table(kAdaptiveAvgPool2dKernels);
  forward(op, x)(contiguous_data(x), out);
  if (needs_grad({x})) {
    const TensorOptions opts = like(x);
    const Shape in_shape = x.shape();
    record("AdaptiveAvgPool2DBackward", {x}, {&out}, [in_shape, opts](const TensorList& gr) {
      Tensor gx = empty(in_shape, opts);
      static const KernelTable<AdaptiveAvgPool2dBackwardKernel>& backward =
          kernel_table(kAdaptiveAvgPool2dBackwardKernels);
      backward("adaptive_avg_pool2d backward", gr[0])(gr[0].contiguous(), gx);
      return TensorList{gx};
    });
  }
  return out;
}

}  // namespace qgrad
