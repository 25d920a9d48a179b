// FP8 codes: the 8-bit E4M3 / E5M2 encodings of float32 values and back, with the semantics of
// CUDA's __nv_fp8_e4m3 / __nv_fp8_e5m2 conversions (__nv_cvt_float_to_fp8 with __NV_SATFINITE,
// and the widening operator float): round to nearest, ties to even, on the value; finite values
// beyond the largest finite code and +-Inf saturate to +-max (E4M3 0x7E = 448, E5M2 0x7B =
// 57344); a value at or below half the smallest subnormal becomes a zero that keeps x's sign;
// NaN becomes the canonical code 0x7F in both formats (CUDA discards NaN's sign). Decoding gives
// the exact value, +-Inf for E5M2's 0x7C/0xFC, and the canonical float NaN (0x7FFFFFFF) for NaN
// codes (E4M3 0x7F/0xFF, E5M2 exponent 11111 with a non-zero mantissa). The element math is in
// QGRAD_HD functors so that a CUDA kernel can share it; the tensor functions run on the CPU.
#pragma once

#include <cstdint>

#include "core/host_device.h"
#include "core/tensor.h"
#include "quant/nvidia/num_bits.h"

namespace qgrad::nvidia {

// Constants of one 8-bit format: M mantissa bits, exponent bias, largest finite code (positive),
// and whether the top exponent field is IEEE-like Inf/NaN (E5M2) or E4M3's "FN" layout.
struct Fp8Layout {
  int mantissa_bits;
  int bias;
  std::uint32_t max_code;
  bool ieee_like;
};
inline constexpr Fp8Layout kFp8E4M3{3, 7, 0x7E, false};
inline constexpr Fp8Layout kFp8E5M2{2, 15, 0x7B, true};

// float32 -> 8-bit code.
struct Fp8Encode {
  Fp8Layout f;
  QGRAD_HD_INLINE std::uint8_t operator()(float x) const {
    const std::uint32_t u = hd::bits_of(x);
    const std::uint32_t sign = (u >> 31) << 7;
    const std::uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return 0x7F;  // NaN: canonical, sign dropped
    const int M = f.mantissa_bits;
    // Largest finite magnitude and smallest normal, as float32 bit patterns.
    const std::uint32_t max_exp = (f.max_code >> M) - f.bias + 127;
    const std::uint32_t max_bits = (max_exp << 23) | ((f.max_code & ((1u << M) - 1)) << (23 - M));
    if (a >= max_bits) return static_cast<std::uint8_t>(sign | f.max_code);  // +-Inf too
    const std::uint32_t min_normal_bits = static_cast<std::uint32_t>(1 - f.bias + 127) << 23;
    std::uint32_t res;
    if (a >= min_normal_bits) {
      const int shift = 23 - M;
      res = ((((a >> 23) - 127 + f.bias) << M) | ((a >> shift) & ((1u << M) - 1)));
      const std::uint32_t rest = a & ((1u << shift) - 1), half = 1u << (shift - 1);
      if (rest > half || (rest == half && (res & 1u))) ++res;  // a carry moves into the exponent
      if (res > f.max_code) res = f.max_code;
    } else {
      // Subnormal range: count multiples of the smallest subnormal 2^(1-bias-M) (a power-of-two
      // scaling, exact), rounded half to even; 2^M units is the smallest normal code.
      const float units =
          hd::float_of(a) * hd::float_of(static_cast<std::uint32_t>(f.bias - 1 + M + 127) << 23);
      res = static_cast<std::uint32_t>(hd::rint(units));
    }
    return static_cast<std::uint8_t>(sign | res);
  }
};

// 8-bit code -> float32.
struct Fp8Decode {
  Fp8Layout f;
  QGRAD_HD_INLINE float operator()(std::uint8_t c) const {
    const int M = f.mantissa_bits;
    const std::uint32_t sign = static_cast<std::uint32_t>(c >> 7) << 31;
    const std::uint32_t mag = c & 0x7Fu;
    const std::uint32_t e = mag >> M, m = mag & ((1u << M) - 1);
    const std::uint32_t top = 0x7Fu >> M;  // all-ones exponent field
    if (f.ieee_like ? (e == top && m != 0) : (mag == 0x7F)) return hd::float_of(0x7FFFFFFFu);
    if (f.ieee_like && e == top) return hd::float_of(sign | 0x7F800000u);
    if (e == 0) {  // zero or subnormal: m * 2^(1-bias-M), exact
      const float unit = hd::float_of(static_cast<std::uint32_t>(127 + 1 - f.bias - M) << 23);
      return hd::float_of(sign | hd::bits_of(static_cast<float>(m) * unit));
    }
    return hd::float_of(sign | ((e - f.bias + 127) << 23) | (m << (23 - M)));
  }
};

// The layout of E4M3 or E5M2; ValueError naming `op` for any other format.
Fp8Layout fp8_layout(FloatFormat format, const char* op);

// Codes of a float32 tensor (any shape, CPU) as a uint8 tensor of the same shape.
Tensor fp8_encode(const Tensor& x, FloatFormat format = kE4M3);
// Values of a uint8 code tensor (CPU) as float32.
Tensor fp8_decode(const Tensor& codes, FloatFormat format = kE4M3);

}  // namespace qgrad::nvidia
