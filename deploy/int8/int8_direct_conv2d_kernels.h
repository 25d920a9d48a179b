// The kernels of Int8DirectConv2d (int8_direct_conv2d.h), internal to it: the vector types, the
// per-image work description, and the requantisation, pooling and store that the float32 kernel
// (int8_direct_conv2d_float.cpp) and the int8 dot-product kernel (int8_direct_conv2d_dot.cpp)
// share, so both give the same grid values from the same integer sums.
#pragma once

#include <cstddef>
#include <cstdint>

#include "deploy/int8/int8_direct_conv2d.h"
#include "deploy/int8/int8_quantize.h"

namespace qgrad::quant::direct_conv {

// Sixteen (and, for row tails, eight) float lanes in GCC / Clang vector extensions: one zmm
// (ymm) register with AVX-512, smaller halves elsewhere.
constexpr std::int64_t kLanes = 16;
using F16 = float __attribute__((vector_size(64)));
using F8 = float __attribute__((vector_size(32)));

// Output channels computed together: each input vector loaded once feeds this many accumulators.
constexpr int kBlock = static_cast<int>(Int8DirectConv2d::kPreferredMaxOutChannels);

// One output channel's requantisation (see the header) in the order oneDNN applies it: the
// scale, the post-op clip relative to the zero point, the zero point, the type's saturation and
// rounding half to even. Saturating before rounding is the same as after (integer bounds), and
// rounding is round_half_even_small (int8_quantize.h), so the whole step runs on vectors.
struct Requant {
  float bias = 0, scale = 1, lo = 0, hi = 0, zp = 0, type_min = 0, type_max = 0;
  bool clip = false;
  bool increasing = true;  // scale > 0: the grid value grows with the accumulator
};

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
  return round_half_even_small(v);
}

// Grid values (exact integers held as floats) to their storage bytes: int32, then the low byte,
// which is the uint8 value or the int8 value's two's complement.
using I16 = std::int32_t __attribute__((vector_size(64)));
using I8 = std::int32_t __attribute__((vector_size(32)));
using B16 = std::uint8_t __attribute__((vector_size(16)));
using B8 = std::uint8_t __attribute__((vector_size(8)));
inline void store_bytes(F16 v, std::uint8_t* dst, std::size_t count) {
  const B16 b = __builtin_convertvector(__builtin_convertvector(v, I16), B16);
  std::memcpy(dst, &b, count);
}
inline void store_bytes(F8 v, std::uint8_t* dst, std::size_t count) {
  const B8 b = __builtin_convertvector(__builtin_convertvector(v, I8), B8);
  std::memcpy(dst, &b, count);
}
inline std::uint8_t byte_of(float v) {
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
inline F16 pair_extreme(F16 v, bool max) {
  const F16 even =
      __builtin_shufflevector(v, v, 0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14);
  const F16 odd =
      __builtin_shufflevector(v, v, 1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7, 9, 11, 13, 15);
  return extreme(even, odd, max);
}
inline F8 pair_extreme(F8 v, bool max) {
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
  // The integer kernel's operands: the input as unsigned bytes u = q - type_min,
  // padded with the zero point's byte ([c][ph][byte_pw], byte_pw = pw + 64 so a 64-byte load at
  // any column stays inside); the weights in groups of four taps along kw packed into int32
  // ([oc][c][kh][groups], zero beyond kw); per channel, zero point byte times the weight sum.
  const std::uint8_t* bytes = nullptr;
  std::int64_t byte_pw = 0, groups = 0;
  const std::int32_t* quads = nullptr;
  const float* correction = nullptr;
};

// The end of a chunk, shared by both kernels: output channel oc0 + j's sums (exact integers held
// as floats) of conv rows i * P .. i * P + P - 1 at conv columns [s, s + lanes), pooled in
// registers (P = 2: each 2x2 window), requantised and stored as pooled columns
// [s / P, (s + lanes) / P) of pooled row i.
template <int P, typename V>
[[gnu::always_inline]] inline void store_pooled(const Work& w, std::int64_t oc0, int j,
                                                std::int64_t i, std::int64_t s,
                                                const V (&rows)[P]) {
  constexpr int lanes = sizeof(V) / sizeof(float);
  const Requant& q = w.rq[oc0 + j];
  V m = rows[0];
  if constexpr (P == 2) m = pair_extreme(extreme(m, rows[1], q.increasing), q.increasing);
  store_bytes(requantize(m, q), w.out + (j * w.out_h + i) * w.out_w + s / P, lanes / P);
}

// The chunk starts of a row of `used` conv columns (>= kLanes): full(s) for 16 columns at s = 0,
// 16, ..., then the tail by one more full(used - 16) or, for 8 or fewer columns, half(used - 8);
// the tail may recompute a few columns (with the same result), and no lane reads past the row.
template <typename Full, typename Half>
void for_each_chunk(std::int64_t used, Full full, Half half) {
  std::int64_t s = 0;
  for (; s + kLanes <= used; s += kLanes) full(s);
  const std::int64_t rest = used - s;
  if (rest > kLanes / 2)
    full(used - kLanes);
  else if (rest > 0)
    half(used - kLanes / 2);
}

// Computes one pooled output row `i` for output channels [oc0, oc0 + nb) into w.out.
using RowKernel = void (*)(const Work& w, std::int64_t oc0, std::int64_t i);

// The float32 kernel for nb in [1, kBlock] channels and pool 1 or 2, on rows of at least kLanes
// used columns; float_row_scalar covers any row and pool, one output at a time.
RowKernel float_row_kernel(int nb, std::int64_t pool);
void float_row_scalar(const Work& w, std::int64_t oc0, int nb, std::int64_t i, std::int64_t pool);

// The int8 dot-product kernel (same limits as float_row_kernel), or nullptr where the build has
// no AVX-512 VNNI and VBMI (has_dot_kernel() false).
bool has_dot_kernel();
RowKernel dot_row_kernel(int nb, std::int64_t pool);

}  // namespace qgrad::quant::direct_conv
