/// @file
/// Host/device portability for the element-wise math that the CPU and CUDA kernels share: the
/// QGRAD_HD marker (__host__ __device__ under nvcc, nothing for the host compiler), inlining
/// attributes for the vectorised CPU loops, and the few scalar helpers whose host and device
/// spellings differ (bit casts, NaN tests, round-half-even, fused multiply-add, min/max that do
/// not depend on `<algorithm>`). A formula written once with these compiles into both kernels, so
/// the two devices compute the same bits (FMA contraction is off on both: -ffp-contract=off,
/// --fmad=false; an explicit hd::fma is the one fused operation).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define QGRAD_HD __host__ __device__
#define QGRAD_HD_INLINE __host__ __device__ __forceinline__
#else
/// Marks a function as callable on the host and, under nvcc, on the device (empty otherwise).
#define QGRAD_HD
#if defined(__GNUC__)
/// Forced: a call left in a loop body (GCC gives up inlining large bodies into big callers)
/// would keep the loop from vectorising.
#define QGRAD_HD_INLINE inline __attribute__((always_inline))
#else
/// QGRAD_HD plus (forced) inlining.
#define QGRAD_HD_INLINE inline
#endif
#endif

// QGRAD_NOINLINE keeps a kernel's small vectorisable loops out of line: inlined into the strided
// driver's call sites, a large body can exceed GCC's inlining budget and stay scalar.
#if defined(__GNUC__) && !defined(__CUDA_ARCH__)
#define QGRAD_NOINLINE __attribute__((noinline))
#else
/// Keeps a function out of line (empty where unsupported).
#define QGRAD_NOINLINE
#endif

namespace qgrad::hd {

QGRAD_HD_INLINE std::uint32_t bits_of(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}
QGRAD_HD_INLINE float float_of(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}
QGRAD_HD_INLINE std::uint64_t bits_of(double x) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint64_t>(__double_as_longlong(x));
#else
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}
QGRAD_HD_INLINE double double_of(std::uint64_t u) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(u));
#else
  double x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

/// A compare, not a libm call (std::isnan can keep a CPU loop scalar); false for integers.
template <typename T>
QGRAD_HD_INLINE bool isnan(T v) {
  return !(v == v);
}

/// Round half to even, as std::nearbyint in the default rounding mode and CUDA's rint.
QGRAD_HD_INLINE float rint(float v) {
#if defined(__CUDA_ARCH__)
  return ::rintf(v);
#else
  return std::nearbyint(v);
#endif
}
QGRAD_HD_INLINE double rint(double v) {
#if defined(__CUDA_ARCH__)
  return ::rint(v);
#else
  return std::nearbyint(v);
#endif
}

// Exact libm operations (and log2) under one name on both sides; the host keeps std::, whose
// calls GCC inlines and vectorises.
QGRAD_HD_INLINE float fabs(float v) {
#if defined(__CUDA_ARCH__)
  return ::fabsf(v);
#else
  return std::fabs(v);
#endif
}
QGRAD_HD_INLINE double fabs(double v) {
#if defined(__CUDA_ARCH__)
  return ::fabs(v);
#else
  return std::fabs(v);
#endif
}
QGRAD_HD_INLINE float copysign(float mag, float sgn) {
#if defined(__CUDA_ARCH__)
  return ::copysignf(mag, sgn);
#else
  return std::copysign(mag, sgn);
#endif
}
QGRAD_HD_INLINE double copysign(double mag, double sgn) {
#if defined(__CUDA_ARCH__)
  return ::copysign(mag, sgn);
#else
  return std::copysign(mag, sgn);
#endif
}
QGRAD_HD_INLINE float floor(float v) {
#if defined(__CUDA_ARCH__)
  return ::floorf(v);
#else
  return std::floor(v);
#endif
}
QGRAD_HD_INLINE double floor(double v) {
#if defined(__CUDA_ARCH__)
  return ::floor(v);
#else
  return std::floor(v);
#endif
}
QGRAD_HD_INLINE double ceil(double v) {
#if defined(__CUDA_ARCH__)
  return ::ceil(v);
#else
  return std::ceil(v);
#endif
}
QGRAD_HD_INLINE float ldexp(float v, int e) {
#if defined(__CUDA_ARCH__)
  return ::ldexpf(v, e);
#else
  return std::ldexp(v, e);
#endif
}
QGRAD_HD_INLINE double ldexp(double v, int e) {
#if defined(__CUDA_ARCH__)
  return ::ldexp(v, e);
#else
  return std::ldexp(v, e);
#endif
}
/// Not correctly rounded on either side: glibc's and CUDA's log2 may differ in the last bit.
QGRAD_HD_INLINE double log2(double v) {
#if defined(__CUDA_ARCH__)
  return ::log2(v);
#else
  return std::log2(v);
#endif
}
/// One rounding of a * b + c: the explicit fused multiply-add where a reference kernel is
/// contracted (contraction is otherwise off on both devices).
QGRAD_HD_INLINE float fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
QGRAD_HD_INLINE double fma(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

template <typename T>
QGRAD_HD_INLINE T min(T a, T b) {
  return b < a ? b : a;
}
template <typename T>
QGRAD_HD_INLINE T max(T a, T b) {
  return a < b ? b : a;
}

}  // namespace qgrad::hd
