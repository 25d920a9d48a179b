/// @file
/// NVIDIA pytorch_quantization / TensorRT Model Optimizer quantization functions, differentiable
/// and bit-exact on CPU in float32 (float64 runs the same formulas in double, for gradcheck).
///
/// Integer (TensorQuantFunction): max_bound = 2^(num_bits-1+unsigned) - 1; min_bound = 0 when
/// unsigned, -max_bound when narrow_range, else -max_bound-1; scale = max_bound / amax (per element
/// of amax, broadcast against x); q = clamp(rne(x * scale), min_bound, max_bound).
/// fake_tensor_quant returns q / scale (a division, not a multiply by 1/scale).
///   - amax <= 2^-24 (inclusive): scale is 0 for the rounding (so q = x * 0, a zero with x's sign)
///     and the returned / dividing scale is 1, exactly as the reference.
///   - amax must be finite and >= 0 (ValueError otherwise: the reference silently produces NaN for
///     NaN or Inf amax); unsigned with a negative input is a ValueError (NaN and -0.0 are not
///     negative).
///   - NaN inputs stay NaN; +-Inf saturate to the bounds (clamp happens in floating point, nothing
///     is ever converted to an integer type). With amax <= 2^-24, +-Inf give NaN (Inf * 0), as the
///     reference does.
///   - Backward (STE with clipping): dx = dy where |x| <= amax (inclusive), else 0; NaN x gives 0.
///     No gradient flows to amax.
///   - num_bits must give max_bound >= 1 and at most 24 (integers stay exact in float32).
///
/// Affine (FakeAffineTensorQuantFunction, gemmlowp): step = (max-min)/(2^b - 1), min_bound =
/// -2^(b-1), max_bound = 2^(b-1) - 1, qz = rne(min/step) - min_bound, q = clamp(rne(x/step) - qz,
/// min_bound, max_bound), out = (q + qz) * step, all in x's dtype; dx = dy where min <= x <= max.
///
/// Minifloat (ScaledE4M3Function generalised to any supported (E,M), see num_bits.h), as
/// pytorch_quantization computes it: with amax, s = fl(fl(1 / amax) * maxval) (PyTorch evaluates
/// pq's `448. / amax` as a reciprocal then a multiply) and out = cast(x * s) / s; without amax,
/// out = cast(x). In both cases inputs with |x| < 2^-24 give +0 (so -0.0 becomes +0.0). There is
/// no special case for a tiny amax: amax = 2^-24 maps 1.0 to 2^-24 and amax = 0 gives s = Inf
/// (finite x -> signed 0; NaN stays NaN). cast = round to nearest even, saturating finite values
/// and +-Inf to +-maxval (CUDA's __NV_SATFINITE; PyTorch's eager E4M3 cast turns |v| > 464 into
/// NaN; qgrad does not), NaN stays NaN. Backward: dx = dy where |x| <= amax (maxval without amax).
/// TensorRT Model Optimizer's own FP8 recipe differs: see modelopt_scaled_fp8 below.
#pragma once

#include <utility>

#include "core/tensor.h"
#include "quant/nvidia/num_bits.h"

namespace qgrad::nvidia {

/// The integer grid of tensor_quant; throws ValueError naming `op` for an unusable num_bits.
struct IntRange {
  double min_bound = 0;  ///< the lowest integer
  double max_bound = 0;  ///< the highest integer
};
/// The grid for num_bits / is_unsigned / narrow_range (see the file comment); ValueError naming
/// op when num_bits is unusable.
IntRange int_quant_range(int num_bits, bool is_unsigned, bool narrow_range, const char* op);

/// Below this amax a channel quantizes to zero (the smallest fp16 subnormal).
inline constexpr double kMinAmax = 1.0 / (1 << 24);

/// (q, scale): q holds the integer values in x's dtype, scale has amax's shape. q is
/// differentiable with respect to x (clipped STE); scale is not.
std::pair<Tensor, Tensor> tensor_quant(const Tensor& x, const Tensor& amax, int num_bits = 8,
                                       bool is_unsigned = false, bool narrow_range = true);
/// tensor_quant's q / scale: x fake-quantized against amax (see the file comment).
Tensor fake_tensor_quant(const Tensor& x, const Tensor& amax, int num_bits = 8,
                         bool is_unsigned = false, bool narrow_range = true);
/// Same math as fake_tensor_quant (pytorch_quantization kept it as the pure-PyTorch fallback).
Tensor legacy_fake_tensor_quant(const Tensor& x, const Tensor& amax, int num_bits = 8,
                                bool is_unsigned = false, bool narrow_range = true);

/// gemmlowp's affine fake quantization of x over [min_range, max_range] (see the file comment).
Tensor fake_affine_tensor_quant(const Tensor& x, double min_range, double max_range,
                                int num_bits = 8);

/// amax may be undefined (plain cast). scaled_e4m3 is the same function with modelopt's defaults.
Tensor scaled_minifloat_quant(const Tensor& x, const Tensor& amax, FloatFormat format);
/// scaled_minifloat_quant in the (E, M) format.
Tensor scaled_e4m3(const Tensor& x, const Tensor& amax, int E = 4, int M = 3);

/// The plain cast into an (E,M) format (round to nearest even, saturating, NaN stays NaN, the sign
/// of zero kept), with no scale and no small-value mask; backward dx = dy where |x| <= maxval.
Tensor minifloat_cast(const Tensor& x, FloatFormat format);

/// TensorRT Model Optimizer's FP8 fake quant (modelopt.torch.quantization.tensor_quant._fp8_eager,
/// its CPU path), a different recipe from pq's scaled_e4m3: an amax <= 2^-24 is replaced by 1;
/// s = fl(fl(1 / amax) * maxval), inv = fl(1 / s) and out = cast(x * s) * inv (a multiply by the
/// reciprocal, not a division), with NO small-value mask (-0.0 stays -0.0); cast saturates as
/// above (modelopt clamps x * s to +-maxval before its cast, the same thing). Backward: dx = dy
/// where |x| <= amax (the amax given, not the replaced one). Without amax (E4M3 only): modelopt's
/// plain torch.float8_e4m3fn cast, which gives NaN for |x| > 464 and +-Inf, and a backward that
/// passes every gradient. Checked bit for bit against modelopt's own code
/// (tests/fixtures/gen_modelopt_reference.py); an infinite amax is refused (modelopt: all NaN).
Tensor modelopt_scaled_fp8(const Tensor& x, const Tensor& amax, FloatFormat format = kE4M3);

}  // namespace qgrad::nvidia
