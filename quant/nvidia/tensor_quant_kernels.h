// The NVIDIA quantizers' kernel signatures (no autograd, no argument checks) and their per-device
// register functions. Every quantization kernel walks a contiguous tensor through a BlockLayout
// and reads its per-block parameters from contiguous grid tensors of the same dtype, so
// per-tensor, per-channel and block quantization share one code path. All arithmetic rounds as
// written (the build uses -ffp-contract=off) and nothing converts a float to an integer type, so
// huge values, Inf and NaN cannot cause undefined behaviour. The fronts (tensor_quant.cpp,
// quant_apply.cpp, block_quant.cpp, calibrator.cpp) reach them through the "nvidia.*" tables.
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"
#include "quant/nvidia/block_layout.h"
#include "quant/nvidia/num_bits.h"

namespace qgrad::nvidia {

// Integer grid: q = clamp(rne(x * sq[g]), lo, hi); out = fake ? q / sd[g] : q.
using IntQuantKernel = void(const Tensor& x, const Tensor& out, const BlockLayout& L,
                            const Tensor& sq, const Tensor& sd, double lo, double hi, bool fake);
inline constexpr KernelTableKey<IntQuantKernel> kIntQuantKernels{
    "nvidia.int_quant",
    "tensor_quant fake_tensor_quant legacy_fake_tensor_quant block_fake_quant block_effective_amax "
    "BlockQuantizer"};

// Scaled minifloat: q = cast(x * s[g]); out = fake ? q / d[g] : q. With zero_small, inputs with
// |x| < 2^-24 give +0 (modelopt's ScaledE4M3 zero mask).
using FpScaledQuantKernel = void(const Tensor& x, const Tensor& out, const BlockLayout& L,
                                 const Tensor& s, const Tensor& d, const MiniFloatSpec& fmt,
                                 bool zero_small, bool fake);
inline constexpr KernelTableKey<FpScaledQuantKernel> kFpScaledQuantKernels{
    "nvidia.fp_scaled_quant",
    "scaled_e4m3 scaled_minifloat_quant block_fake_quant block_effective_amax BlockQuantizer"};

// Divide-then-multiply minifloat (MX and NVFP4): q = cast(x / s[g]); out = fake ? q * s[g] : q.
// A block with s[g] == 0 gives x * 0 (a signed zero).
using FpDivmulQuantKernel = void(const Tensor& x, const Tensor& out, const BlockLayout& L,
                                 const Tensor& s, const MiniFloatSpec& fmt, bool fake);
inline constexpr KernelTableKey<FpDivmulQuantKernel> kFpDivmulQuantKernels{
    "nvidia.fp_divmul_quant", "block_fake_quant block_effective_amax BlockQuantizer"};

// Clipped straight-through estimator: gx = |x| <= amax[g] ? dy : 0 (inclusive; NaN x gives 0).
using ClipSteBackwardKernel = void(const Tensor& dy, const Tensor& x, const Tensor& gx,
                                   const BlockLayout& L, const Tensor& amax);
inline constexpr KernelTableKey<ClipSteBackwardKernel> kClipSteBackwardKernels{
    "nvidia.clip_ste_backward",
    "tensor_quant fake_tensor_quant legacy_fake_tensor_quant scaled_e4m3 scaled_minifloat_quant "
    "block_fake_quant block_effective_amax BlockQuantizer"};

// Per-block max |x| over the finite elements (NaN and +-Inf are skipped) into `grid` (zeros when a
// block has none). Returns true when a non-finite element was seen.
using BlockAbsmaxKernel = bool(const Tensor& x, const BlockLayout& L, const Tensor& grid);
inline constexpr KernelTableKey<BlockAbsmaxKernel> kBlockAbsmaxKernels{
    "nvidia.block_absmax",
    "block_fake_quant block_effective_amax BlockQuantizer block_amax MaxCalibrator"};

// True when any element of a contiguous x is < 0 (NaN and -0.0 are not).
using AnyNegativeKernel = bool(const Tensor& x);
inline constexpr KernelTableKey<AnyNegativeKernel> kAnyNegativeKernels{
    "nvidia.any_negative",
    "tensor_quant fake_tensor_quant legacy_fake_tensor_quant block_fake_quant block_effective_amax "
    "BlockQuantizer MaxCalibrator"};

// The scales of an amax grid for a quantizer whose largest value is `bound` (the integer and the
// scaled-minifloat quantizers): s = bound / amax[g]; quant_scale[g] = 0 and dequant_scale[g] = 1
// where amax[g] <= 2^-24, else both s. Three contiguous grids of one size and dtype.
using AmaxScalesKernel = void(const Tensor& amax, double bound, const Tensor& quant_scale,
                              const Tensor& dequant_scale);
inline constexpr KernelTableKey<AmaxScalesKernel> kAmaxScalesKernels{
    "nvidia.amax_scales",
    "tensor_quant fake_tensor_quant legacy_fake_tensor_quant scaled_e4m3 scaled_minifloat_quant "
    "block_fake_quant block_effective_amax BlockQuantizer"};

// gemmlowp affine fake quant: q = clamp(rne(x / step) - qz, lo, hi); out = (q + qz) * step.
using AffineFakeQuantKernel = void(const Tensor& x, const Tensor& out, double step, double qz,
                                   double lo, double hi);
inline constexpr KernelTableKey<AffineFakeQuantKernel> kAffineFakeQuantKernels{
    "nvidia.affine_fake_quant", "fake_affine_tensor_quant"};
// gx = (lo_range <= x <= hi_range) ? dy : 0.
using RangeSteBackwardKernel = void(const Tensor& dy, const Tensor& x, const Tensor& gx,
                                    double lo_range, double hi_range);
inline constexpr KernelTableKey<RangeSteBackwardKernel> kRangeSteBackwardKernels{
    "nvidia.range_ste_backward", "fake_affine_tensor_quant"};

void register_tensor_quant_cpu_kernels(KernelRegistry& r);
void register_tensor_quant_cuda_kernels(KernelRegistry& r);

}  // namespace qgrad::nvidia
