// Branch-free float32 approximations of exp, log, tanh and erfc (Cephes / Numerical Recipes
// polynomials, a few ulp), written so that GCC and Clang auto-vectorise the CPU loops calling
// them (std::exp & co. are opaque libm calls that keep a loop scalar; the -ffast-math vector
// variants are off limits here) and marked QGRAD_HD so that the CUDA kernels compute the same
// bits. Special values follow libm: NaN propagates, exp(-inf) = 0, exp(inf) = inf, log(0) = -inf,
// log(x < 0) = NaN. float64 keeps libm (the gradcheck path, where accuracy matters more than
// speed). Also exp_nonpositive, the softmax family's exp for x <= 0 (Cephes' expf scheme with the
// clamp those kernels need), and blocked_sum, their CPU summation: an `omp simd` reduction in the
// element type over blocks of kSumBlock terms, the block sums added in double (a double reduction
// of float terms does not vectorise, a float one over a long row would lose accuracy).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"

namespace qgrad::vec_math {

using hd::bits_of;
using hd::float_of;

// cond ? a : b on bit patterns, without a branch.
QGRAD_HD_INLINE std::uint32_t select_bits(bool cond, std::uint32_t a, std::uint32_t b) {
  return b ^ ((a ^ b) & (0u - static_cast<std::uint32_t>(cond)));
}

// exp(r) for |r| <= ln2/2: Cephes' degree-6 polynomial, evaluated as written (both exps below).
QGRAD_HD_INLINE float exp_reduced(float r) {
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * (r * r) + r + 1.0f;
}

// exp(x): x = n ln2 + r with |r| <= ln2/2, a degree-6 polynomial for exp(r), and 2^n applied
// as two factors so results in the subnormal range round gradually instead of flushing.
QGRAD_HD_INLINE float exp(float x) {
  // Clamp keeps n small enough for the exponent arithmetic (NaN fails both tests and stays NaN).
  x = x > 89.0f ? 89.0f : x;
  x = x < -104.0f ? -104.0f : x;
  const float kMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float t = x * 1.44269504088896341f + kMagic;
  const float n = t - kMagic;
  const std::uint32_t ni = bits_of(t) - bits_of(kMagic);  // n as a two's complement integer
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  const float p = exp_reduced(r);
  // n in [-150, 129]: split into two halves that are each a normal power of two.
  const std::uint32_t n1 = static_cast<std::uint32_t>(static_cast<std::int32_t>(ni) >> 1);
  const std::uint32_t n2 = ni - n1;
  const float s1 = float_of((n1 + 127u) << 23);
  const float s2 = float_of((n2 + 127u) << 23);
  return p * s1 * s2;
}

// log(x): x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) from a degree-9 polynomial in m - 1.
QGRAD_HD_INLINE float log(float x) {
  // Mask arithmetic instead of ?: before the int -> float conversion: GCC turns those selects
  // into branches and then will not move the conversion (which "may trap") out of them, which
  // would keep the loop scalar.
  const std::uint32_t u_in = bits_of(x);
  const std::uint32_t u_scaled = bits_of(x * 8388608.0f);  // subnormals times 2^23 are normal
  const std::uint32_t sub = u_in < 0x00800000u;            // +0 and positive subnormals
  const std::uint32_t u = u_in ^ ((u_in ^ u_scaled) & (0u - sub));
  const std::uint32_t m_bits = (u & 0x007fffffu) | 0x3f000000u;  // mantissa in [0.5, 1)
  const std::uint32_t small = m_bits < 0x3f3504f3u;              // m < sqrt(1/2)
  const std::int32_t e_int =
      static_cast<std::int32_t>(((u >> 23) & 0xffu) - 126u - (23u & (0u - sub)) - small);
  const float e = static_cast<float>(e_int);
  const float m0 = float_of(m_bits);
  // m0 - 1, or 2 m0 - 1 when small (both exact).
  const float m = (m0 - 1.0f) + float_of(m_bits & (0u - small));
  const float z = m * m;
  float p = 7.0376836292e-2f;
  p = p * m - 1.1514610310e-1f;
  p = p * m + 1.1676998740e-1f;
  p = p * m - 1.2420140846e-1f;
  p = p * m + 1.4249322787e-1f;
  p = p * m - 1.6668057665e-1f;
  p = p * m + 2.0000714765e-1f;
  p = p * m - 2.4999993993e-1f;
  p = p * m + 3.3333331174e-1f;
  float y = p * m * z;
  y = y + e * -2.12194440e-4f;
  y = y - 0.5f * z;
  float r = m + y;
  r = r + e * 0.693359375f;
  // Special values, again as masks (a ?: here makes GCC sink the polynomial into a branch).
  std::uint32_t out = bits_of(r);
  out = select_bits(u_in > 0x7f800000u, 0x7fc00000u, out);          // NaN, or negative: NaN
  out = select_bits((u_in & 0x7fffffffu) == 0u, 0xff800000u, out);  // +-0: -inf
  out = select_bits(u_in == 0x7f800000u, 0x7f800000u, out);         // +inf: +inf
  return float_of(out);
}

// tanh(x): an odd polynomial near 0 (no cancellation), 1 - 2 / (exp(2|x|) + 1) elsewhere.
QGRAD_HD_INLINE float tanh(float x) {
  const float ax = x < 0.0f ? -x : x;
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float near0 = p * z * x + x;
  const float e = vec_math::exp(ax + ax);
  float far = 1.0f - 2.0f / (e + 1.0f);
  far = x < 0.0f ? -far : far;
  const float r = ax < 0.625f ? near0 : far;  // NaN takes `far`, which is NaN
  return x == 0.0f ? x : r;                   // keeps the sign of -0
}

// erfc(x) for x >= 0 with relative error below ~2e-7 (Numerical Recipes' Chebyshev fit), the
// form gelu needs: 0.5 * erfc(|x| / sqrt 2) is the Gaussian tail without cancellation.
QGRAD_HD_INLINE float erfc_nonneg(float z) {
  const float t = 1.0f / (1.0f + 0.5f * z);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  return t * vec_math::exp(p - z * z);
}

// The standard normal CDF Phi(x) = 0.5 * erfc(-x / sqrt 2).
QGRAD_HD_INLINE float normal_cdf(float x) {
  const float z = (x < 0.0f ? -x : x) * 0.70710678118654752f;
  const float half_tail = 0.5f * erfc_nonneg(z);
  return x < 0.0f ? half_tail : 1.0f - half_tail;
}

// exp(x) for x <= 0 — every caller exponentiates x - max(x) or a log-probability. Positive
// inputs (only rounding noise reaches here) are treated as 0; x below ln(FLT_MIN) (including
// -inf) gives exactly 0; NaN gives NaN.
QGRAD_HD_INLINE float exp_nonpositive(float x) {
  constexpr float kLo = -87.33654475f;  // ln(FLT_MIN): below it the result would be subnormal
  // Clamp into [kLo, 0]; NaN maps to kLo so that the integer conversion below is defined.
  const float xc = x > kLo ? (x > 0.0f ? 0.0f : x) : kLo;
  // n = round(x / ln 2) by the 1.5 * 2^23 trick (exact here: |x / ln 2| < 2^22).
  const float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;  // n * C1 is exact
  const float p = exp_reduced(r);
  const float scale = float_of(
      static_cast<std::uint32_t>((static_cast<std::int32_t>(n) + 127) * (1 << 23)));  // 2^n
  return x != x ? x : (x < kLo ? 0.0f : p * scale);
}

QGRAD_HD_INLINE double exp_nonpositive(double x) {
  return std::exp(x);
}

inline constexpr std::int64_t kSumBlock = 512;

// sum of term(i) for i in [0, n): T-precision SIMD partial sums per block, combined in double.
template <typename T, typename F>
double blocked_sum(std::int64_t n, F&& term) {
  double total = 0;
  for (std::int64_t b = 0; b < n; b += kSumBlock) {
    const std::int64_t e = n - b < kSumBlock ? n : b + kSumBlock;
    T partial = 0;
#pragma omp simd reduction(+ : partial)
    for (std::int64_t i = b; i < e; ++i) partial += term(i);
    total += static_cast<double>(partial);
  }
  return total;
}

}  // namespace qgrad::vec_math
