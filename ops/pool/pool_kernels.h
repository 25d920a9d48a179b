// The pool family's kernel signatures (max, average and adaptive average 2-D pooling, forward
// and backward: one table each) and its per-device register functions. All tensors are
// contiguous [N, C, H, W] of one floating dtype; outputs are preallocated.
#pragma once

#include <cstdint>

#include "core/dispatch.h"
#include "core/tensor.h"
#include "ops/pool/pool_geometry.h"

namespace qgrad {

// out = max pooling of x. With keep_workspace, returns what the backward needs to route the
// gradient to each window's (first) maximum (on the CPU: oneDNN's workspace, uint8 bytes, for
// float32; the int64 argmax, a flat index into the H*W plane, for float64 and for float32
// input holding a NaN, which oneDNN skips while PyTorch propagates it). Otherwise returns an
// undefined tensor.
using MaxPool2dKernel = Tensor(const Tensor& x, const Tensor& out, const Pool2dGeometry& g,
                               bool keep_workspace);
inline constexpr KernelTableKey<MaxPool2dKernel> kMaxPool2dKernels{"max_pool2d", "max_pool2d"};
// gx = gradient of max pooling, from gy and the workspace the forward kernel returned.
using MaxPool2dBackwardKernel = void(const Tensor& gy, const Tensor& workspace, const Tensor& gx,
                                     const Pool2dGeometry& g);
inline constexpr KernelTableKey<MaxPool2dBackwardKernel> kMaxPool2dBackwardKernels{
    "max_pool2d_backward", "max_pool2d"};

// Average pooling with PyTorch's divisor: divisor_override when > 0; else, with
// count_include_pad, the window clipped to the padded input; else the valid input elements.
using AvgPool2dKernel = void(const Tensor& x, const Tensor& out, const Pool2dGeometry& g,
                             bool count_include_pad, std::int64_t divisor_override);
inline constexpr KernelTableKey<AvgPool2dKernel> kAvgPool2dKernels{"avg_pool2d", "avg_pool2d"};
// gx = gradient of the average pooling above, from gy.
using AvgPool2dBackwardKernel = void(const Tensor& gy, const Tensor& gx, const Pool2dGeometry& g,
                                     bool count_include_pad, std::int64_t divisor_override);
inline constexpr KernelTableKey<AvgPool2dBackwardKernel> kAvgPool2dBackwardKernels{
    "avg_pool2d_backward", "avg_pool2d"};

// Adaptive average pooling to out's spatial size; window i of n over length L covers
// [floor(i*L/n), ceil((i+1)*L/n)).
using AdaptiveAvgPool2dKernel = void(const Tensor& x, const Tensor& out);
inline constexpr KernelTableKey<AdaptiveAvgPool2dKernel> kAdaptiveAvgPool2dKernels{
    "adaptive_avg_pool2d", "adaptive_avg_pool2d"};
// gx (x's shape) = gradient of the adaptive average pooling, from gy (out's shape).
using AdaptiveAvgPool2dBackwardKernel = void(const Tensor& gy, const Tensor& gx);
inline constexpr KernelTableKey<AdaptiveAvgPool2dBackwardKernel> kAdaptiveAvgPool2dBackwardKernels{
    "adaptive_avg_pool2d_backward", "adaptive_avg_pool2d"};

void register_pool_cpu_kernels(KernelRegistry& r);
void register_pool_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad
