// Int8DirectConv2d's float32 kernel: 16 output columns per vector, exact integer sums by
// multiply-adds, pooled in registers; and the one-output-at-a-time form for narrow rows.
// x86 intrinsics only where the kernels use them (the header does not exist elsewhere).
#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif

#include <cstring>

#include "deploy/int8/int8_direct_conv2d_kernels.h"

namespace qgrad::quant::direct_conv {

namespace {

// a + x * w. With a fused multiply-add where the target has one: the sums here are integers
// below 2^24, exact with or without the intermediate rounding, so this is the same result in half
// the instructions (the file is built with -ffp-contract=off, which keeps the requantisation's
// float steps separate, as oneDNN computes them).
inline F16 mul_add(F16 a, F16 x, float w) {
#if defined(__AVX512F__)
  return (F16)_mm512_fmadd_ps((__m512)x, _mm512_set1_ps(w), (__m512)a);
#else
  return a + x * w;
#endif
}
inline F8 mul_add(F8 a, F8 x, float w) {
#if defined(__FMA__)
  return (F8)_mm256_fmadd_ps((__m256)x, _mm256_set1_ps(w), (__m256)a);
#else
  return a + x * w;
#endif
}

// Output channels [oc0, oc0 + NB), pooled row i (conv rows i * P .. i * P + P - 1), conv columns
// [s, s + lanes of V) (s even when P = 2): the accumulators of every window, pooled in registers,
// requantised, stored as the pooled columns [s / P, (s + lanes) / P).
template <typename V, int NB, int P>
void conv_chunk(const Work& w, std::int64_t oc0, std::int64_t i, std::int64_t s) {
  const std::int64_t taps = w.channels * w.kh * w.kw;
  V a[P][NB];
  for (int r = 0; r < P; ++r)
    for (int j = 0; j < NB; ++j) a[r][j] = V{};
  for (std::int64_t c = 0; c < w.channels; ++c)
    for (std::int64_t ky = 0; ky < w.kh; ++ky) {
      const float* wt = w.weight + (oc0 * w.channels + c) * w.kh * w.kw + ky * w.kw;
      for (std::int64_t kx = 0; kx < w.kw; ++kx)
        for (int r = 0; r < P; ++r) {
          V x;
          std::memcpy(&x, w.plane + (c * w.ph + i * P + r + ky) * w.pw + s + kx, sizeof x);
          for (int j = 0; j < NB; ++j) a[r][j] = mul_add(a[r][j], x, wt[j * taps + kx]);
        }
    }
  for (int j = 0; j < NB; ++j) {
    V rows[P];
    for (int r = 0; r < P; ++r) rows[r] = a[r][j];
    store_pooled<P>(w, oc0, j, i, s, rows);
  }
}

// One pooled row (at least 16 used conv columns).
template <int NB, int P>
void conv_row(const Work& w, std::int64_t oc0, std::int64_t i) {
  for_each_chunk(
      w.out_w * P, [&](std::int64_t s) { conv_chunk<F16, NB, P>(w, oc0, i, s); },
      [&](std::int64_t s) { conv_chunk<F8, NB, P>(w, oc0, i, s); });
}

template <int P>
constexpr RowKernel kRowKernels[kBlock] = {&conv_row<1, P>, &conv_row<2, P>, &conv_row<3, P>,
                                           &conv_row<4, P>, &conv_row<5, P>, &conv_row<6, P>,
                                           &conv_row<7, P>, &conv_row<8, P>};

}  // namespace

RowKernel float_row_kernel(int nb, std::int64_t pool) {
  return (pool == 2 ? kRowKernels<2> : kRowKernels<1>)[nb - 1];
}

// The same one output at a time, for narrow rows and any pool size.
void float_row_scalar(const Work& w, std::int64_t oc0, int nb, std::int64_t i, std::int64_t pool) {
  const std::int64_t taps = w.channels * w.kh * w.kw;
  for (int j = 0; j < nb; ++j) {
    const Requant& q = w.rq[oc0 + j];
    const float* wt = w.weight + (oc0 + j) * taps;
    for (std::int64_t k = 0; k < w.out_w; ++k) {
      float m = 0;
      for (std::int64_t di = 0; di < pool; ++di)
        for (std::int64_t dk = 0; dk < pool; ++dk) {
          const std::int64_t oy = i * pool + di, ox = k * pool + dk;
          float a = 0;
          for (std::int64_t c = 0; c < w.channels; ++c)
            for (std::int64_t ky = 0; ky < w.kh; ++ky)
              for (std::int64_t kx = 0; kx < w.kw; ++kx)
                a += w.plane[(c * w.ph + oy + ky) * w.pw + ox + kx] *
                     wt[(c * w.kh + ky) * w.kw + kx];
          m = di == 0 && dk == 0 ? a : extreme(m, a, q.increasing);
        }
      w.out[(j * w.out_h + i) * w.out_w + k] = byte_of(requantize(m, q));
    }
  }
}

}  // namespace qgrad::quant::direct_conv
