// AIMET v2 affine quantization's kernel signatures (no autograd) and its per-device register
// functions; affine_quantize.cpp reaches them through the "aimet.affine_*" and
// "aimet.round_half_even" tables. `wide` computes in double (AIMET upcasts float32 when the grid
// is too fine for float32 to be numerically stable).
//
// The fast kernels take contiguous x / g and an EncodingLayout ([outer, channels, inner], one
// encoding element per channel) with scale and offset as contiguous tensors of `channels`
// elements: runs of one channel read its scale and offset once (per-tensor and per-channel loops
// vectorise), and the backward sums the scale / offset gradients per channel inside the kernel.
// Those sums are split into boxes fixed by the layout alone (about 16K elements each, at most 256
// channels), each box summed in a fixed order, then the boxes added in order: the result does not
// depend on the thread count.
//
// The strided kernels handle any encoding shape (scale and offset arrive as views expanded to x's
// shape) and return unreduced, x-shaped gradients; they serve encodings with no EncodingLayout,
// and every encoding off the CPU (the fast kernels are CPU-only, so the ops' catalogue entries
// are the strided tables', which have every device's kernels).
#pragma once

#include <cstdint>

#include "core/dispatch.h"
#include "core/tensor.h"
#include "quant/aimet/encoding_layout.h"

namespace qgrad::aimet {

enum class AffineKind { Quantize, Dequantize, QuantizeDequantize };

// Quantize:           y = clamp(rne(x / s) - o, qmin, qmax)
// Dequantize:         y = (x + o) * s
// QuantizeDequantize: y = (clamp(rne(x / s) - o, qmin, qmax) + o) * s
// x, y contiguous with layout l. `mask` (optional; uint8, contiguous; not for Dequantize)
// receives qmin <= rne(x / s) - o <= qmax, for a backward that needs dx only.
using AffineForwardKernel = void(AffineKind kind, const EncodingLayout& l, const Tensor& x,
                                 const Tensor& scale, const Tensor& offset, std::int64_t qmin,
                                 std::int64_t qmax, bool wide, const Tensor& y, const Tensor& mask);
inline constexpr KernelTableKey<AffineForwardKernel> kAffineForwardKernels{"aimet.affine_forward",
                                                                           ""};

// dx alone from the forward's mask (ignored for Dequantize): Quantize dx = (g*m)/s,
// Dequantize dx = g*s, QuantizeDequantize dx = g*m. g, mask, dx contiguous.
using AffineBackwardDxKernel = void(AffineKind kind, const EncodingLayout& l, const Tensor& g,
                                    const Tensor& mask, const Tensor& scale, bool wide,
                                    const Tensor& dx);
inline constexpr KernelTableKey<AffineBackwardDxKernel> kAffineBackwardDxKernels{
    "aimet.affine_backward_dx", ""};

// The gradients recomputed from x (AIMET's formulas, m = qmin <= rne(x / s) - o <= qmax):
// Quantize:           dx = (g*m)/s, ds = -((g*m)/s)*(x/s), do = -(g*m)
// Dequantize:         dx = g*s, ds = g*(x+o), do = g*s
// QuantizeDequantize: dx = g*m, ds = g*(clamp(rne(x/s), o+qmin, o+qmax) - (x/s)*m),
//                     do = g*(!m*s)
// Each element's ds / do is rounded to x's dtype, then summed per channel in double into
// dscale / doffset (`channels` elements, x's dtype). Any of dx, dscale, doffset may be undefined
// (not computed). g, x, dx contiguous.
using AffineBackwardKernel = void(AffineKind kind, const EncodingLayout& l, const Tensor& g,
                                  const Tensor& x, const Tensor& scale, const Tensor& offset,
                                  std::int64_t qmin, std::int64_t qmax, bool wide, const Tensor& dx,
                                  const Tensor& dscale, const Tensor& doffset);
inline constexpr KernelTableKey<AffineBackwardKernel> kAffineBackwardKernels{
    "aimet.affine_backward", ""};

// Any strides: scale and offset expanded to x's shape (zero strides on broadcast dims).
using AffineForwardStridedKernel = void(AffineKind kind, const Tensor& x, const Tensor& scale,
                                        const Tensor& offset, std::int64_t qmin, std::int64_t qmax,
                                        bool wide, const Tensor& y);
inline constexpr KernelTableKey<AffineForwardStridedKernel> kAffineForwardStridedKernels{
    "aimet.affine_forward_strided", "aimet.quantize aimet.dequantize aimet.quantize_dequantize"};
// Unreduced x-shaped gradients (contiguous outputs) of the formulas above.
using AffineBackwardStridedKernel = void(AffineKind kind, const Tensor& g, const Tensor& x,
                                         const Tensor& scale, const Tensor& offset,
                                         std::int64_t qmin, std::int64_t qmax, bool wide,
                                         const Tensor& dx, const Tensor& dscale,
                                         const Tensor& doffset);
inline constexpr KernelTableKey<AffineBackwardStridedKernel> kAffineBackwardStridedKernels{
    "aimet.affine_backward_strided", "aimet.quantize aimet.dequantize aimet.quantize_dequantize"};

// y = rne(x) (the forward of AIMET's ste_round).
using RoundHalfEvenKernel = void(const Tensor& x, const Tensor& y);
inline constexpr KernelTableKey<RoundHalfEvenKernel> kRoundHalfEvenKernels{"aimet.round_half_even",
                                                                           "aimet.ste_round"};

void register_affine_quantize_cpu_kernels(KernelRegistry& r);
void register_affine_quantize_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad::aimet
