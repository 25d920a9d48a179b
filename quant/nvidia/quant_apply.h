// Internal building blocks shared by tensor_quant.cpp, block_quant.cpp and calibrator.cpp: turning
// per-block amax grids into the scales each quantizer defines and running the kernels on them
// through the "nvidia.*" tables of xc's device (no argument checks, no autograd; `op` names the
// caller in a missing-kernel error), plus the recording of the clipped straight-through estimator.
#pragma once

#include <string>

#include "core/autograd/node.h"
#include "core/tensor.h"
#include "quant/nvidia/block_layout.h"
#include "quant/nvidia/num_bits.h"
#include "quant/nvidia/tensor_quant.h"

namespace qgrad::nvidia {

// Integer quantization of contiguous xc against a grid of amax (xc's dtype, contiguous).
// Returns the fake-quantized (or integer) tensor; *scale_out receives max_bound/amax with 1 where
// amax <= 2^-24 (the scale tensor_quant returns).
Tensor apply_int_quant(const char* op, const Tensor& xc, const BlockLayout& L, const Tensor& amax,
                       const IntRange& range, bool fake, Tensor* scale_out = nullptr);

// Scaled minifloat quantization (s = fl(fl(1 / amax) * maxval), q = cast(x * s) / s, zero mask
// |x| < 2^-24, amax <= 2^-24 gives x * 0; used by the block quantizers); an undefined amax
// means the plain cast. *scale_out receives s (1 where amax <= 2^-24 or amax is undefined).
Tensor apply_scaled_minifloat(const char* op, const Tensor& xc, const BlockLayout& L,
                              const Tensor& amax, const MiniFloatSpec& fmt, bool fake,
                              Tensor* scale_out = nullptr);

// q = cast(x * s[g]); out = q / d[g] (fake) or q, with the |x| < 2^-24 -> +0 mask when
// zero_small: the scales are given (s and d grids of xc's dtype, contiguous).
Tensor apply_scaled_minifloat_with_scales(const char* op, const Tensor& xc, const BlockLayout& L,
                                          const Tensor& s, const Tensor& d,
                                          const MiniFloatSpec& fmt, bool zero_small, bool fake);

// q = cast(x / s[g]); out = q * s[g] (fake) or q.
Tensor apply_divmul_minifloat(const char* op, const Tensor& xc, const BlockLayout& L,
                              const Tensor& s, const MiniFloatSpec& fmt, bool fake);

// Grid of per-block max |x| over finite elements; *nonfinite tells whether NaN/Inf were seen.
Tensor block_absmax(const char* op, const Tensor& xc, const BlockLayout& L,
                    bool* nonfinite = nullptr);

// Records `name` on out with the backward dx = dy where |xc| <= amax_eff[g], no gradient for the
// other inputs. inputs[0] must be the tensor xc was made from.
void record_clip_ste(const std::string& name, const TensorList& inputs, Tensor& out,
                     const Tensor& xc, const BlockLayout& L, const Tensor& amax_eff);

// amax as a contiguous copy in `dtype`, checked finite and >= 0 (ValueError naming op; off the
// CPU by a kernel, which a GPU reports at the host's next wait). Callers check first that amax
// lives on the input's device and that it has kernels there.
Tensor checked_amax_copy(const char* op, const Tensor& amax, DType dtype);

// ValueError naming `op` when the contiguous xc has a negative value (unsigned quantization).
// Off the CPU a kernel checks and a GPU reports it at the host's next wait.
void check_unsigned_input(const char* op, const Tensor& xc);

}  // namespace qgrad::nvidia
