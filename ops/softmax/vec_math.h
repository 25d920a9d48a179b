// Vectorisable math for the softmax-family kernels (softmax, log_softmax, cross entropy).
// exp: glibc's expf is an opaque call that keeps every exp loop scalar (the -ffast-math vector
// variants are off limits here), and exp dominates these kernels. float uses Cephes' expf scheme
// (range reduction by ln 2 split in two constants, degree-6 polynomial, exponent assembled in the
// bit pattern; within 1e-7 relative of exp); double keeps std::exp (the float64 reference path).
// blocked_sum: an `omp simd` reduction in the element type over blocks of kSumBlock terms, the
// block sums added in double: a double reduction of float terms does not vectorise, and a float
// one over a whole long row would lose accuracy. Inline so that both inline into kernel loops.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace qgrad {

// exp(x) for x <= 0 — every caller exponentiates x - max(x) or a log-probability. Positive
// inputs (only rounding noise reaches here) are treated as 0; x below ln(FLT_MIN) (including
// -inf) gives exactly 0; NaN gives NaN.
inline float exp_nonpositive(float x) {
  constexpr float kLo = -87.33654475f;  // ln(FLT_MIN): below it the result would be subnormal
  // Clamp into [kLo, 0]; NaN maps to kLo so that the integer conversion below is defined.
  const float xc = x > kLo ? (x > 0.0f ? 0.0f : x) : kLo;
  // n = round(x / ln 2) by the 1.5 * 2^23 trick (exact here: |x / ln 2| < 2^22).
  const float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;  // n * C1 is exact
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = (p * (r * r) + r) + 1.0f;
  const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) * (1 << 23);  // 2^n
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return x != x ? x : (x < kLo ? 0.0f : p * scale);
}

inline double exp_nonpositive(double x) {
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

}  // namespace qgrad
