// Int8DirectConv2d's int8 dot-product kernel (AVX-512 VNNI and VBMI): four taps per vpdpbusd on
// byte windows gathered by vpermb, pooled and requantised by the float kernel's code.
// x86 intrinsics only where the kernels use them (the header does not exist elsewhere).
#if defined(__AVX512VNNI__) && defined(__AVX512VBMI__) && defined(__AVX512VL__)
#include <immintrin.h>
#endif

#include <cstring>

#include "deploy/int8/int8_direct_conv2d_kernels.h"

namespace qgrad::quant::direct_conv {

namespace {

#if defined(__AVX512VNNI__) && defined(__AVX512VBMI__) && defined(__AVX512VL__)
#define QGRAD_DIRECT_CONV_DOT 1
// GCC 12 reports the _mm512_undefined_*() placeholders inside its own AVX-512 intrinsics as
// uninitialized once they are inlined (GCC bug 105593, fixed in 13); nothing here reads them.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// The integer kernel's registers: 16 (zmm) or 8 (ymm) int32 lanes, one output column each. Lane i
// of quads() holds the input bytes of columns s + i .. s + i + 3 (VBMI's byte permute of one
// unaligned load), dot() adds their products with four weight bytes (VNNI's vpdpbusd: u8 times
// s8, summed in int32 without saturation).
struct Zmm {
  using I = __m512i;
  using F = F16;
  static I zero() { return _mm512_setzero_si512(); }
  static I window_index() {
    alignas(64) std::uint8_t idx[64];
    for (int b = 0; b < 64; ++b) idx[b] = static_cast<std::uint8_t>(b / 4 + b % 4);
    return _mm512_load_si512(idx);
  }
  static I quads(const std::uint8_t* p, I idx) {
    return _mm512_permutexvar_epi8(idx, _mm512_loadu_si512(p));
  }
  static I dot(I acc, I q, std::int32_t w) {
    return _mm512_dpbusd_epi32(acc, q, _mm512_set1_epi32(w));
  }
  static F to_float(I v) { return (F)_mm512_cvtepi32_ps(v); }
};
struct Ymm {
  using I = __m256i;
  using F = F8;
  static I zero() { return _mm256_setzero_si256(); }
  static I window_index() {
    alignas(32) std::uint8_t idx[32];
    for (int b = 0; b < 32; ++b) idx[b] = static_cast<std::uint8_t>(b / 4 + b % 4);
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(idx));
  }
  static I quads(const std::uint8_t* p, I idx) {
    return _mm256_permutexvar_epi8(idx, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static I dot(I acc, I q, std::int32_t w) {
    return _mm256_dpbusd_epi32(acc, q, _mm256_set1_epi32(w));
  }
  static F to_float(I v) { return (F)_mm256_cvtepi32_ps(v); }
};

// conv_chunk's work with integer dot products: four taps per instruction instead of one. The
// int32 sums minus the zero point's correction are the same integers as the float kernel's, and
// the pooling, requantisation and store are the same code.
template <typename R, int NB, int P>
void dot_chunk(const Work& w, std::int64_t oc0, std::int64_t i, std::int64_t s) {
  const typename R::I idx = R::window_index();
  const std::int64_t per_channel = w.channels * w.kh * w.groups;
  typename R::I a[P][NB];
  for (int r = 0; r < P; ++r)
    for (int j = 0; j < NB; ++j) a[r][j] = R::zero();
  for (std::int64_t c = 0; c < w.channels; ++c)
    for (std::int64_t ky = 0; ky < w.kh; ++ky) {
      const std::int32_t* wq = w.quads + (oc0 * w.channels + c) * w.kh * w.groups + ky * w.groups;
      for (std::int64_t t = 0; t < w.groups; ++t)
        for (int r = 0; r < P; ++r) {
          const typename R::I q =
              R::quads(w.bytes + (c * w.ph + i * P + r + ky) * w.byte_pw + s + 4 * t, idx);
          for (int j = 0; j < NB; ++j) a[r][j] = R::dot(a[r][j], q, wq[j * per_channel + t]);
        }
    }
  for (int j = 0; j < NB; ++j) {
    typename R::F rows[P];
    for (int r = 0; r < P; ++r) rows[r] = R::to_float(a[r][j]) - w.correction[oc0 + j];
    store_pooled<P>(w, oc0, j, i, s, rows);
  }
}

template <int NB, int P>
void dot_row(const Work& w, std::int64_t oc0, std::int64_t i) {
  for_each_chunk(
      w.out_w * P, [&](std::int64_t s) { dot_chunk<Zmm, NB, P>(w, oc0, i, s); },
      [&](std::int64_t s) { dot_chunk<Ymm, NB, P>(w, oc0, i, s); });
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#else
#define QGRAD_DIRECT_CONV_DOT 0
#endif

#if QGRAD_DIRECT_CONV_DOT
template <int P>
constexpr RowKernel kDotRowKernels[kBlock] = {&dot_row<1, P>, &dot_row<2, P>, &dot_row<3, P>,
                                              &dot_row<4, P>, &dot_row<5, P>, &dot_row<6, P>,
                                              &dot_row<7, P>, &dot_row<8, P>};
#endif

}  // namespace

bool has_dot_kernel() {
  return QGRAD_DIRECT_CONV_DOT != 0;
}

RowKernel dot_row_kernel([[maybe_unused]] int nb, [[maybe_unused]] std::int64_t pool) {
#if QGRAD_DIRECT_CONV_DOT
  return (pool == 2 ? kDotRowKernels<2> : kDotRowKernels<1>)[nb - 1];
#else
  return nullptr;
#endif
}

}  // namespace qgrad::quant::direct_conv
