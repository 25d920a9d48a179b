// Int8DirectConv2d: output columns in the vector lanes, exact float32 sums, oneDNN's
// requantisation order, and an optional fused max pool.
#include "deploy/int8/int8_direct_conv2d.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <type_traits>

#include "core/error.h"
#include "core/shape.h"
#include "core/strided_loop.h"
#include "deploy/int8/int8_dnnl.h"
#include "deploy/int8/int8_quantize.h"

namespace qgrad::quant {

namespace {

// Sixteen (and, for row tails, eight) float lanes in GCC / Clang vector extensions: one zmm
// (ymm) register with AVX-512, smaller halves elsewhere.
constexpr std::int64_t kLanes = 16;
using F16 = float __attribute__((vector_size(64)));
using F8 = float __attribute__((vector_size(32)));

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

// Output channels computed together: each input vector loaded once feeds this many accumulators.
constexpr int kBlock = static_cast<int>(Int8DirectConv2d::kPreferredMaxOutChannels);

// One output channel's requantisation (see the header) in the order oneDNN applies it: the
// scale, the post-op clip relative to the zero point, the zero point, the type's saturation and
// rounding half to even. Saturating before rounding is the same as after (integer bounds), and
// rounding is (t + 1.5 * 2^23) - 1.5 * 2^23, exact half-to-even for |t| < 2^22 in the default
// rounding mode, so the whole step runs on vectors.
struct Requant {
  float bias = 0, scale = 1, lo = 0, hi = 0, zp = 0, type_min = 0, type_max = 0;
  bool clip = false;
  bool increasing = true;  // scale > 0: the grid value grows with the accumulator
};

constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23

template <typename V>
V requantize(V acc, const Requant& r) {
  V v = (acc + r.bias) * r.scale;
  if (r.clip) {
    v = v < r.lo ? V{} + r.lo : v;
    v = v > r.hi ? V{} + r.hi : v;
  }
  v = v + r.zp;
  v = v < r.type_min ? V{} + r.type_min : v;
  v = v > r.type_max ? V{} + r.type_max : v;
  return (v + kRoundMagic) - kRoundMagic;
}

// Grid values (exact integers held as floats) to their storage bytes: int32, then the low byte,
// which is the uint8 value or the int8 value's two's complement.
using I16 = std::int32_t __attribute__((vector_size(64)));
using I8 = std::int32_t __attribute__((vector_size(32)));
using B16 = std::uint8_t __attribute__((vector_size(16)));
using B8 = std::uint8_t __attribute__((vector_size(8)));
void store_bytes(F16 v, std::uint8_t* dst, std::size_t count) {
  const B16 b = __builtin_convertvector(__builtin_convertvector(v, I16), B16);
  std::memcpy(dst, &b, count);
}
void store_bytes(F8 v, std::uint8_t* dst, std::size_t count) {
  const B8 b = __builtin_convertvector(__builtin_convertvector(v, I8), B8);
  std::memcpy(dst, &b, count);
}
std::uint8_t byte_of(float v) {
  return static_cast<std::uint8_t>(static_cast<std::int32_t>(v));
}

// Elementwise max or min of two vectors (or floats): the pooled accumulator of a channel whose
// requantisation increases (positive scale: the maximum) or decreases (a negative scale from a
// folded batch norm with gamma < 0: the minimum) with the accumulator. Requantisation is monotone,
// so pooling the accumulators and requantising once gives the max pool of the requantised values.
template <typename V>
V extreme(V a, V b, bool max) {
  return max ? (a > b ? a : b) : (a < b ? a : b);
}

// Adjacent pairs (0, 1), (2, 3), ... reduced to their extreme, in the low half of the result.
F16 pair_extreme(F16 v, bool max) {
  const F16 even =
      __builtin_shufflevector(v, v, 0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14);
  const F16 odd =
      __builtin_shufflevector(v, v, 1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7, 9, 11, 13, 15);
  return extreme(even, odd, max);
}
F8 pair_extreme(F8 v, bool max) {
  const F8 even = __builtin_shufflevector(v, v, 0, 2, 4, 6, 0, 2, 4, 6);
  const F8 odd = __builtin_shufflevector(v, v, 1, 3, 5, 7, 1, 3, 5, 7);
  return extreme(even, odd, max);
}

// The layer's shapes and buffers for one image: `plane` holds the zero-point-free input,
// zero-padded ([c][ph][pw]); `weight` is [oc][c][kh][kw]; `out` receives the pooled grid
// bytes, [j][out_h][out_w] for the channels of the current block.
struct Work {
  const float* plane;
  const float* weight;
  const Requant* rq;
  std::int64_t channels, ph, pw, kh, kw, out_w, out_h;
  std::uint8_t* out;
  // The integer kernel's operands (integer_dot): the input as unsigned bytes u = q - type_min,
  // padded with the zero point's byte ([c][ph][byte_pw], byte_pw = pw + 64 so a 64-byte load at
  // any column stays inside); the weights in groups of four taps along kw packed into int32
  // ([oc][c][kh][groups], zero beyond kw); per channel, zero point byte times the weight sum.
  const std::uint8_t* bytes = nullptr;
  std::int64_t byte_pw = 0, groups = 0;
  const std::int32_t* quads = nullptr;
  const float* correction = nullptr;
};

// Output channels [oc0, oc0 + NB), pooled row i (conv rows i * P .. i * P + P - 1), conv columns
// [s, s + lanes of V) (s even when P = 2): the accumulators of every window, pooled in registers,
// requantised, stored as the pooled columns [s / P, (s + lanes) / P).
template <typename V, int NB, int P>
void conv_chunk(const Work& w, std::int64_t oc0, std::int64_t i, std::int64_t s) {
  constexpr int lanes = sizeof(V) / sizeof(float);
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
    const Requant& q = w.rq[oc0 + j];
    V m = a[0][j];
    if constexpr (P == 2) m = pair_extreme(extreme(m, a[1][j], q.increasing), q.increasing);
    store_bytes(requantize(m, q), w.out + (j * w.out_h + i) * w.out_w + s / P, lanes / P);
  }
}

// One pooled row: 16 conv columns per vector over the columns the pooled output uses, the tail by
// one 8- or 16-lane vector ending there (it may recompute a few columns, with the same result),
// so no lane reads past the padded row. Needs at least 16 such columns.
template <int NB, int P>
void conv_row(const Work& w, std::int64_t oc0, std::int64_t i) {
  const std::int64_t used = w.out_w * P;
  std::int64_t s = 0;
  for (; s + kLanes <= used; s += kLanes) conv_chunk<F16, NB, P>(w, oc0, i, s);
  const std::int64_t rest = used - s;
  if (rest > kLanes / 2)
    conv_chunk<F16, NB, P>(w, oc0, i, used - kLanes);
  else if (rest > 0)
    conv_chunk<F8, NB, P>(w, oc0, i, used - kLanes / 2);
}

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
  constexpr int lanes = sizeof(typename R::F) / sizeof(float);
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
    const Requant& q = w.rq[oc0 + j];
    const float corr = w.correction[oc0 + j];
    typename R::F m = R::to_float(a[0][j]) - corr;
    if constexpr (P == 2) {
      m = extreme(m, R::to_float(a[1][j]) - corr, q.increasing);
      m = pair_extreme(m, q.increasing);
    }
    store_bytes(requantize(m, q), w.out + (j * w.out_h + i) * w.out_w + s / P, lanes / P);
  }
}

template <int NB, int P>
void dot_row(const Work& w, std::int64_t oc0, std::int64_t i) {
  const std::int64_t used = w.out_w * P;
  std::int64_t s = 0;
  for (; s + kLanes <= used; s += kLanes) dot_chunk<Zmm, NB, P>(w, oc0, i, s);
  const std::int64_t rest = used - s;
  if (rest > kLanes / 2)
    dot_chunk<Zmm, NB, P>(w, oc0, i, used - kLanes);
  else if (rest > 0)
    dot_chunk<Ymm, NB, P>(w, oc0, i, used - kLanes / 2);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#else
#define QGRAD_DIRECT_CONV_DOT 0
#endif

// The same one output at a time, for narrow rows and any pool size.
void conv_row_scalar(const Work& w, std::int64_t oc0, int nb, std::int64_t i, std::int64_t pool) {
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

using RowKernel = void (*)(const Work&, std::int64_t, std::int64_t);
template <int P>
constexpr RowKernel kRowKernels[kBlock] = {&conv_row<1, P>, &conv_row<2, P>, &conv_row<3, P>,
                                           &conv_row<4, P>, &conv_row<5, P>, &conv_row<6, P>,
                                           &conv_row<7, P>, &conv_row<8, P>};
#if QGRAD_DIRECT_CONV_DOT
template <int P>
constexpr RowKernel kDotRowKernels[kBlock] = {&dot_row<1, P>, &dot_row<2, P>, &dot_row<3, P>,
                                              &dot_row<4, P>, &dot_row<5, P>, &dot_row<6, P>,
                                              &dot_row<7, P>, &dot_row<8, P>};
#endif

struct Geometry {
  std::int64_t n, c, h, w, oc, kh, kw, pad_h, pad_w, ph, pw, oh, ow, pool, out_h, out_w;
};

// The input value of storage type TI without its zero point (float32 input: quantized first, as
// Int8Quantize would).
struct InputValue {
  Int8QuantizeStep step;
  float zp;
  float operator()(std::uint8_t v) const { return static_cast<float>(v) - zp; }
  float operator()(std::int8_t v) const { return static_cast<float>(v) - zp; }
  float operator()(float v) const { return step(v) - zp; }
};

// The integer kernel's packed weights and corrections (see Work).
struct DotOperands {
  std::int64_t groups = 0;
  std::vector<std::int32_t> quads;
  std::vector<float> correction;
  std::uint8_t zero_byte = 0;  // the input zero point as an unsigned byte: the padding's value
};

template <typename TI>
void run_images(const Geometry& g, const Tensor& x, const InputValue& value,
                const std::vector<float>& weight, const std::vector<Requant>& rq,
                const DotOperands* dot, float type_min, const Tensor& y, std::int64_t n0,
                std::int64_t n1) {
  const bool vectors = g.out_w * g.pool >= kLanes && g.pool <= 2;
  const bool integer = dot != nullptr && vectors;
  std::vector<float> plane(integer ? 0 : static_cast<std::size_t>(g.c * g.ph * g.pw), 0.0f);
  const std::int64_t byte_pw = g.pw + 64;
  std::vector<std::uint8_t> bytes(integer ? static_cast<std::size_t>(g.c * g.ph * byte_pw) : 0,
                                  integer ? dot->zero_byte : 0);
  std::vector<std::uint8_t> pooled(static_cast<std::size_t>(kBlock * g.out_h * g.out_w));
  Work w{plane.data(), weight.data(), rq.data(), g.c,     g.ph,         g.pw,
         g.kh,         g.kw,          g.out_w,   g.out_h, pooled.data()};
  if (integer) {
    w.bytes = bytes.data();
    w.byte_pw = byte_pw;
    w.groups = dot->groups;
    w.quads = dot->quads.data();
    w.correction = dot->correction.data();
  }
  const auto* px = static_cast<const TI*>(x.raw_data());
  auto* py = static_cast<std::uint8_t*>(y.raw_data());  // uint8 or int8: bytes either way
  const Shape& xs = x.strides();
  const Shape& ys = y.strides();
  for (std::int64_t b = n0; b < n1; ++b) {
    // The input without its zero point, the padding 0 (a real zero); for the integer kernel,
    // as unsigned bytes with the zero point's byte in the padding. The converter is a local
    // copy and the rows restrict pointers: stores could otherwise alias it, which keeps these
    // loops from vectorising.
    const InputValue v = value;
    const float shift = v.zp - type_min;  // v() subtracts zp; the bytes count from the type's min
    for (std::int64_t c = 0; c < g.c; ++c)
      for (std::int64_t i = 0; i < g.h; ++i) {
        const TI* __restrict__ in = px + b * xs[0] + c * xs[1] + i * xs[2];
        const std::int64_t sx = xs[3], width = g.w;
        if (integer) {
          std::uint8_t* __restrict__ row =
              bytes.data() + (c * g.ph + i + g.pad_h) * byte_pw + g.pad_w;
          if constexpr (std::is_same_v<TI, float>) {
            if (sx == 1 && width >= kLanes) {
              // 16 columns per vector, the last vector moved back to end at the row's end.
              for (std::int64_t j0 = 0; j0 < width; j0 += kLanes) {
                const std::int64_t j = std::min(j0, width - kLanes);
                F16 f;
                std::memcpy(&f, in + j, sizeof f);
                store_bytes(v.step(f) - type_min, row + j, kLanes);
              }
              continue;
            }
          }
          if (sx == 1) {
            for (std::int64_t j = 0; j < width; ++j)
              row[j] = static_cast<std::uint8_t>(static_cast<std::int32_t>(v(in[j]) + shift));
          } else {
            for (std::int64_t j = 0; j < width; ++j)
              row[j] = static_cast<std::uint8_t>(static_cast<std::int32_t>(v(in[j * sx]) + shift));
          }
        } else {
          float* __restrict__ row = plane.data() + (c * g.ph + i + g.pad_h) * g.pw + g.pad_w;
          if constexpr (std::is_same_v<TI, float>) {
            if (sx == 1 && width >= kLanes) {
              for (std::int64_t j0 = 0; j0 < width; j0 += kLanes) {
                const std::int64_t j = std::min(j0, width - kLanes);
                F16 f;
                std::memcpy(&f, in + j, sizeof f);
                const F16 q = v.step(f) - v.zp;
                std::memcpy(row + j, &q, sizeof q);
              }
              continue;
            }
          }
          if (sx == 1) {
            for (std::int64_t j = 0; j < width; ++j) row[j] = v(in[j]);
          } else {
            for (std::int64_t j = 0; j < width; ++j) row[j] = v(in[j * sx]);
          }
        }
      }
    for (std::int64_t oc0 = 0; oc0 < g.oc; oc0 += kBlock) {
      const int nb = static_cast<int>(std::min<std::int64_t>(kBlock, g.oc - oc0));
      for (std::int64_t i = 0; i < g.out_h; ++i) {
        if (!vectors) conv_row_scalar(w, oc0, nb, i, g.pool);
#if QGRAD_DIRECT_CONV_DOT
        else if (integer)
          (g.pool == 2 ? kDotRowKernels<2> : kDotRowKernels<1>)[nb - 1](w, oc0, i);
#endif
        else if (g.pool == 2)
          kRowKernels<2>[nb - 1](w, oc0, i);
        else
          kRowKernels<1>[nb - 1](w, oc0, i);
      }
      // The block's channels into the output (NHWC from new_activation: a pixel's channels
      // side by side). Strides in locals: the byte stores could otherwise alias them.
      const std::int64_t area = g.out_h * g.out_w, sc = ys[1], sh = ys[2], sw = ys[3];
      std::uint8_t* __restrict__ out = py + b * ys[0] + oc0 * sc;
      const std::uint8_t* __restrict__ in = pooled.data();
      for (std::int64_t i = 0; i < g.out_h; ++i)
        for (std::int64_t k = 0; k < g.out_w; ++k) {
          std::uint8_t* px_out = out + i * sh + k * sw;
          const std::uint8_t* px_in = in + i * g.out_w + k;
          for (int j = 0; j < nb; ++j) px_out[j * sc] = px_in[j * area];
        }
    }
  }
}

}  // namespace

bool Int8DirectConv2d::supports(const Int8Conv2dSpec& s) {
  return s.groups == 1 && s.stride == std::array<std::int64_t, 2>{1, 1} &&
         s.dilation == std::array<std::int64_t, 2>{1, 1} && s.output.has_value() &&
         !s.residual.has_value() && s.padding[0] >= 0 && s.padding[1] >= 0 &&
         s.in_channels * s.kernel[0] * s.kernel[1] <= kMaxInputsPerOutput;
}

bool Int8DirectConv2d::preferred(const Int8Conv2dSpec& s) {
  return supports(s) && s.out_channels <= kPreferredMaxOutChannels;
}

bool Int8DirectConv2d::supports_pool(const Int8MaxPool2dSpec& p) {
  return p.kernel[0] == p.kernel[1] && p.kernel[0] >= 1 && p.stride == p.kernel &&
         p.padding == std::array<std::int64_t, 2>{0, 0} &&
         p.dilation == std::array<std::int64_t, 2>{1, 1} && !p.ceil_mode;
}

bool Int8DirectConv2d::has_integer_kernel() {
  return QGRAD_DIRECT_CONV_DOT != 0;
}

Int8DirectConv2d::Int8DirectConv2d(Int8Conv2dSpec spec, std::optional<Int8MaxPool2dSpec> pool,
                                   Int8DirectConv2dOptions options)
    : spec_(std::move(spec)), pool_(std::move(pool)), options_(options) {
  check_int8_conv_spec(spec_);
  QGRAD_CHECK(supports(spec_), ValueError, "int8 direct conv2d: ", spec_.name,
              ": needs groups 1, stride 1, dilation 1, an int8 output, no residual and at most ",
              kMaxInputsPerOutput, " inputs per output (in_channels * kh * kw = ",
              spec_.in_channels * spec_.kernel[0] * spec_.kernel[1], ")");
  QGRAD_CHECK(!pool_ || supports_pool(*pool_), ValueError,
              "int8 direct conv2d: ", pool_ ? pool_->name : std::string(),
              ": only a max pool with kernel = stride, no padding or dilation and floor mode can "
              "be fused");
  weight_.assign(spec_.weight.begin(), spec_.weight.end());
  integer_ = options_.integer_kernel && has_integer_kernel();
  const std::int64_t o = spec_.out_channels, c = spec_.in_channels, kh = spec_.kernel[0],
                     kw = spec_.kernel[1];
  groups_ = (kw + 3) / 4;
  quads_.assign(static_cast<std::size_t>(o * c * kh * groups_), 0);
  weight_sum_.assign(static_cast<std::size_t>(o), 0);
  for (std::int64_t j = 0; j < o; ++j)
    for (std::int64_t ci = 0; ci < c; ++ci)
      for (std::int64_t y = 0; y < kh; ++y)
        for (std::int64_t x = 0; x < kw; ++x) {
          const std::int8_t v =
              spec_.weight[static_cast<std::size_t>(((j * c + ci) * kh + y) * kw + x)];
          weight_sum_[static_cast<std::size_t>(j)] += v;
          // Byte x % 4 of group x / 4, little-endian: vpdpbusd's order within a dword.
          auto& q = quads_[static_cast<std::size_t>(((j * c + ci) * kh + y) * groups_ + x / 4)];
          q = static_cast<std::int32_t>(
              static_cast<std::uint32_t>(q) |
              (static_cast<std::uint32_t>(static_cast<std::uint8_t>(v)) << (8 * (x % 4))));
        }
  Int8ConvRequant r = int8_conv_requant(spec_);
  out_scale_ = std::move(r.out_scale);
  bias_acc_ = std::move(r.bias_acc);
  impl_info_ = std::string("qgrad direct conv, ") + std::to_string(kLanes) + " columns per vector" +
               (integer_ ? ", int8 dot products (VNNI)" : ", float32 multiply-adds") +
               (options_.quantize_input ? ", input quantized in the pass" : "") +
               (pool_ ? ", fused max pool" : "");
}

std::string Int8DirectConv2d::describe() const {
  const Int8Conv2dSpec& s = spec_;
  std::ostringstream os;
  os << s.name << ": int8 direct conv " << s.in_channels << "->" << s.out_channels << " k"
     << s.kernel[0] << "x" << s.kernel[1] << ", "
     << (options_.quantize_input ? "float32 quantized to " : "") << dtype_name(s.input.dtype())
     << " -> " << dtype_name(s.output->dtype()) << (s.relu ? ", fused ReLU" : "");
  if (pool_)
    os << ", fused " << pool_->name << ": max pool k" << pool_->kernel[0] << "x"
       << pool_->kernel[1];
  return os.str();
}

Tensor Int8DirectConv2d::forward(const Tensor& x) {
  const Int8Conv2dSpec& s = spec_;
  QGRAD_CHECK(x.dim() == 4 && x.size(1) == s.in_channels, ShapeError,
              "int8 direct conv2d: ", s.name, ": input must be [N, ", s.in_channels,
              ", H, W], got ", shape_str(x.shape()));
  const DType in_dtype = options_.quantize_input ? DType::Float32 : s.input.dtype();
  QGRAD_CHECK(x.dtype() == in_dtype, DTypeError, "int8 direct conv2d: ", s.name, ": input must be ",
              dtype_name(in_dtype), " (its grid: ", s.input.str(),
              options_.quantize_input ? ", quantized here" : "", "), got ", dtype_name(x.dtype()));
  Geometry g{};
  g.n = x.size(0);
  g.c = s.in_channels;
  g.h = x.size(2);
  g.w = x.size(3);
  g.oc = s.out_channels;
  g.kh = s.kernel[0];
  g.kw = s.kernel[1];
  g.pad_h = s.padding[0];
  g.pad_w = s.padding[1];
  g.ph = g.h + 2 * g.pad_h;
  g.pw = g.w + 2 * g.pad_w;
  QGRAD_CHECK(g.ph >= g.kh && g.pw >= g.kw, ShapeError, "int8 direct conv2d: ", s.name, ": input ",
              shape_str(x.shape()), " is smaller than the kernel");
  g.oh = g.ph - g.kh + 1;
  g.ow = g.pw - g.kw + 1;
  g.pool = pool_ ? pool_->kernel[0] : 1;
  g.out_h = g.oh / g.pool;
  g.out_w = g.ow / g.pool;
  QGRAD_CHECK(g.out_h > 0 && g.out_w > 0, ShapeError, "int8 direct conv2d: ", s.name, ": the ",
              g.oh, "x", g.ow, " output is smaller than the fused pool's ", g.pool, "x", g.pool,
              " window");

  const Int8Grid& out = *s.output;
  const bool u8 = out.is_uint8();
  std::vector<Requant> rq(static_cast<std::size_t>(g.oc));
  for (std::int64_t c = 0; c < g.oc; ++c) {
    Requant& r = rq[static_cast<std::size_t>(c)];
    r.bias = bias_acc_[static_cast<std::size_t>(c)];
    r.scale = out_scale_[static_cast<std::size_t>(c)];
    r.increasing = r.scale >= 0;
    r.zp = static_cast<float>(out.zero_point);
    // The clip post-op of Int8Conv2d (requantize_post_ops), relative to the zero point.
    r.clip = s.relu || out.narrower_than_type();
    const std::int64_t lo =
        s.relu ? std::max<std::int64_t>(out.zero_point, out.quant_min) : out.quant_min;
    r.lo = static_cast<float>(lo - out.zero_point);
    r.hi = static_cast<float>(out.quant_max - out.zero_point);
    r.type_min = u8 ? 0.0f : -128.0f;
    r.type_max = u8 ? 255.0f : 127.0f;
  }
  Tensor y = int8_dnnl::new_activation({g.n, g.oc, g.out_h, g.out_w}, out.dtype());
  const InputValue value{Int8QuantizeStep(s.input), static_cast<float>(s.input.zero_point)};
  const float type_min = s.input.is_uint8() ? 0.0f : -128.0f;
  DotOperands dot;
  if (integer_) {
    dot.groups = groups_;
    dot.quads = quads_;
    dot.zero_byte = static_cast<std::uint8_t>(s.input.zero_point - static_cast<int>(type_min));
    for (std::int64_t sum : weight_sum_)
      dot.correction.push_back(static_cast<float>(dot.zero_byte * sum));  // |.| < 2^24: exact
  }
  const DotOperands* d = integer_ ? &dot : nullptr;
  parallel_for(g.n, 2, [&](std::int64_t n0, std::int64_t n1) {
    if (options_.quantize_input)
      run_images<float>(g, x, value, weight_, rq, d, type_min, y, n0, n1);
    else if (s.input.is_uint8())
      run_images<std::uint8_t>(g, x, value, weight_, rq, d, type_min, y, n0, n1);
    else
      run_images<std::int8_t>(g, x, value, weight_, rq, d, type_min, y, n0, n1);
  });
  return y;
}

}  // namespace qgrad::quant
