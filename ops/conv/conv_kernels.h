// The conv family's kernel signatures ("conv2d_forward" and "conv2d_backward" tables: 2-D
// convolution forward, and backward data, weights and bias in one call), the geometry they
// share, and its per-device register functions. Also the CPU kernels' algorithm choice
// (conv2d_cpu_algorithms), which is oneDNN specific and exposed for the tests.
#pragma once

#include <cstdint>
#include <memory>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace qgrad {

// Every size of one convolution, validated by conv2d (ops/conv/conv.cpp).
struct Conv2dGeometry {
  std::int64_t n, c, h, w;  // input [n, c, h, w]
  std::int64_t o, kh, kw;   // weight [o, c / groups, kh, kw]
  std::int64_t sh, sw, ph, pw, dh, dw, groups;
  std::int64_t oh, ow;  // output [n, o, oh, ow]
};

// What the forward keeps for the backward of the same call (on the CPU, for float32: the
// oneDNN primitive it used, the hint for the backward primitives, and the input and weights
// already reordered to the layouts oneDNN chose, so the backward does not reorder them again).
// Opaque here; defined by the kernels that fill it.
struct Conv2dForwardState;

// y = conv(x, w) + bias. y is contiguous [n, o, oh, ow], preallocated; bias may be undefined.
// With `state` non-null (training) the forward fills it for the backward kernel; keep_input /
// keep_weights say which reordered operands the backward will need.
using Conv2dForwardKernel = void(const Conv2dGeometry& g, const Tensor& x, const Tensor& w,
                                 const Tensor& bias, const Tensor& y,
                                 std::shared_ptr<Conv2dForwardState>* state, bool keep_input,
                                 bool keep_weights);
inline constexpr KernelTableKey<Conv2dForwardKernel> kConv2dForwardKernels{"conv2d_forward",
                                                                           "conv2d"};
// Gradients of the forward above from gy [n, o, oh, ow]: gx (needs w), gw and gb (need x). Each
// of gx, gw, gb is preallocated contiguous, or undefined when not wanted. `state` is the one the
// forward filled (may be null for float64).
using Conv2dBackwardKernel = void(const Conv2dGeometry& g, const Tensor& gy, const Tensor& x,
                                  const Tensor& w, const Conv2dForwardState* state,
                                  const Tensor& gx, const Tensor& gw, const Tensor& gb);
inline constexpr KernelTableKey<Conv2dBackwardKernel> kConv2dBackwardKernels{"conv2d_backward",
                                                                             "conv2d"};

// CPU (oneDNN) specific: the algorithm the float32 kernels ask oneDNN for, per primitive:
// true = Winograd F(4x4, 3x3), false = direct. Winograd where it measured faster than direct
// on AVX-512 (3x3, stride 1, no dilation or groups, batch >= 16; forward and backward data with
// at least 32 channels on both sides and enough work, backward weights from 16 channels);
// direct where oneDNN has no Winograd kernel for the machine.
struct Conv2dAlgorithms {
  bool forward = false, backward_data = false, backward_weights = false;
};
Conv2dAlgorithms conv2d_cpu_algorithms(const Conv2dGeometry& g);

void register_conv_cpu_kernels(KernelRegistry& r);
void register_conv_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad
