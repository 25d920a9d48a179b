// CPU kernels of 2-D pooling (no autograd): max and average pooling forward/backward on oneDNN
// for float32 and plain reference loops for float64, and adaptive average pooling (plain loops,
// both dtypes). All tensors are contiguous [N, C, H, W] of one dtype; outputs are preallocated.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "ops/pool/pool_geometry.h"

namespace qgrad {

// out = max pooling of x. With keep_workspace, returns what the backward needs to route the
// gradient to each window's (first) maximum: oneDNN's workspace (uint8 bytes) for float32, the
// int64 argmax (flat index into the H*W plane) for float64 and for float32 input holding a NaN
// (oneDNN skips NaNs; PyTorch, and the reference loop, propagate them). Otherwise returns an
// undefined tensor.
Tensor max_pool2d_cpu(const Tensor& x, const Tensor& out, const Pool2dGeometry& g,
                      bool keep_workspace);
// gx = gradient of max pooling, from gy and the workspace max_pool2d_cpu returned.
void max_pool2d_backward_cpu(const Tensor& gy, const Tensor& workspace, const Tensor& gx,
                             const Pool2dGeometry& g);

// Average pooling with PyTorch's divisor: divisor_override when > 0; else, with
// count_include_pad, the window clipped to the padded input; else the valid input elements.
void avg_pool2d_cpu(const Tensor& x, const Tensor& out, const Pool2dGeometry& g,
                    bool count_include_pad, std::int64_t divisor_override);
void avg_pool2d_backward_cpu(const Tensor& gy, const Tensor& gx, const Pool2dGeometry& g,
                             bool count_include_pad, std::int64_t divisor_override);

// Adaptive average pooling to out's spatial size; window i of n over length L covers
// [floor(i*L/n), ceil((i+1)*L/n)).
void adaptive_avg_pool2d_cpu(const Tensor& x, const Tensor& out);
void adaptive_avg_pool2d_backward_cpu(const Tensor& gy, const Tensor& gx);

}  // namespace qgrad
