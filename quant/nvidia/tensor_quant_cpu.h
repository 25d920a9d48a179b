// Raw CPU kernels of the NVIDIA quantizers (no autograd, no argument checks). Every kernel walks
// a contiguous tensor through a BlockLayout and reads its per-block parameters from contiguous
// grid tensors of the same dtype, so per-tensor, per-channel and block quantization share one
// code path; long runs with one parameter become plain loops the compiler vectorises. All
// arithmetic rounds as written (the build uses -ffp-contract=off) and nothing converts a float to
// an integer type, so huge values, Inf and NaN cannot cause undefined behaviour.
#pragma once

#include "core/tensor.h"
#include "quant/nvidia/block_layout.h"
#include "quant/nvidia/num_bits.h"

namespace qgrad::nvidia {

// Integer grid: q = clamp(rne(x * sq[g]), lo, hi); out = fake ? q / sd[g] : q.
void int_quant_cpu(const Tensor& x, const Tensor& out, const BlockLayout& L, const Tensor& sq,
                   const Tensor& sd, double lo, double hi, bool fake);

// Scaled minifloat: q = cast(x * s[g]); out = fake ? q / d[g] : q. With zero_small, inputs with
// |x| < 2^-24 give +0 (modelopt's ScaledE4M3 zero mask).
void fp_scaled_quant_cpu(const Tensor& x, const Tensor& out, const BlockLayout& L, const Tensor& s,
                         const Tensor& d, const MiniFloatSpec& fmt, bool zero_small, bool fake);

// Divide-then-multiply minifloat (MX and NVFP4): q = cast(x / s[g]); out = fake ? q * s[g] : q.
// A block with s[g] == 0 gives x * 0 (a signed zero).
void fp_divmul_quant_cpu(const Tensor& x, const Tensor& out, const BlockLayout& L, const Tensor& s,
                         const MiniFloatSpec& fmt, bool fake);

// Clipped straight-through estimator: gx = |x| <= amax[g] ? dy : 0 (inclusive; NaN x gives 0).
void clip_ste_backward_cpu(const Tensor& dy, const Tensor& x, const Tensor& gx,
                           const BlockLayout& L, const Tensor& amax);

// Per-block max |x| over the finite elements (NaN and +-Inf are skipped) into `grid` (zeros when a
// block has none). Returns true when a non-finite element was seen.
bool block_absmax_cpu(const Tensor& x, const BlockLayout& L, const Tensor& grid);

// True when any element is < 0 (NaN and -0.0 are not).
bool any_negative_cpu(const Tensor& x);

// gemmlowp affine fake quant: q = clamp(rne(x / step) - qz, lo, hi); out = (q + qz) * step.
void affine_fake_quant_cpu(const Tensor& x, const Tensor& out, double step, double qz, double lo,
                           double hi);
// gx = (lo_range <= x <= hi_range) ? dy : 0.
void range_ste_backward_cpu(const Tensor& dy, const Tensor& x, const Tensor& gx, double lo_range,
                            double hi_range);

}  // namespace qgrad::nvidia
