// The pad family's index rules, shared by the CPU and CUDA kernels (QGRAD_HD, so both devices map
// the same): which input index along one dim an output index copies from, for every pad mode;
// its inverse, the ascending output indices that copy from one input index; and PadGeometry, a
// plan in fixed arrays with the per-element forward map and the backward's gather. The gather
// adds an input element's gradients in ascending output order, the order in which the CPU
// kernel's row-by-row scatter adds them, so both devices give the same bits, run after run (no
// atomics).
#pragma once

#include <cstdint>

#include "core/error.h"
#include "core/host_device.h"
#include "ops/pad/pad_kernels.h"

namespace qgrad::pad_elem {

// Source index of output index `o` along a dim of input size `n` padded by `left` and `right`
// (negative: cropped), or -1 when it falls in a constant border.
QGRAD_HD_INLINE std::int64_t source_index(PadMode mode, std::int64_t n, std::int64_t left,
                                          std::int64_t right, std::int64_t o) {
  const std::int64_t i = o - left;
  switch (mode) {
    case PadMode::Constant:
      return (i >= 0 && i < n) ? i : -1;
    case PadMode::Reflect:
      if (i < 0) return -i;
      if (i >= n) return 2 * (n - 1) - i;
      return i;
    case PadMode::Replicate:
      return i < 0 ? 0 : (i > n - 1 ? n - 1 : i);
    case PadMode::Circular: {
      // Crop first (negative pads), then wrap around the cropped range [a, b).
      const std::int64_t a = left < 0 ? -left : 0;
      const std::int64_t b = n - (right < 0 ? -right : 0);
      const std::int64_t m = b - a;
      const std::int64_t k = (o - (left > 0 ? left : 0)) % m;
      return a + (k < 0 ? k + m : k);
    }
  }
  return -1;
}

// The inverse of source_index: the smallest output index o > prev (of `out` along the dim) whose
// source is input index s, or -1 when none is left. prev = -1 gives the first; each later call
// passes the previous answer. Arguments as pad.cpp admits them (reflect pads below n, circular
// wrapping at most once).
QGRAD_HD_INLINE std::int64_t next_output(PadMode mode, std::int64_t n, std::int64_t left,
                                         std::int64_t right, std::int64_t out, std::int64_t s,
                                         std::int64_t prev) {
  switch (mode) {
    case PadMode::Constant:
    case PadMode::Reflect: {
      // The straight copy and the two mirror images, in ascending order (s <= n - 1); each is
      // kept only where the forward rule really maps it to s.
      const std::int64_t c[3] = {left - s, left + s, left + 2 * (n - 1) - s};
      for (const std::int64_t o : c)
        if (o > prev && o >= 0 && o < out && source_index(mode, n, left, right, o) == s) return o;
      return -1;
    }
    case PadMode::Replicate: {
      // The edges take every output beyond them: one contiguous run [lo, hi].
      const std::int64_t lo = s == 0 ? 0 : left + s;
      const std::int64_t hi = s == n - 1 ? out - 1 : left + s;
      std::int64_t o = prev < lo ? lo : prev + 1;
      if (o < 0) o = 0;  // cropped
      return o <= hi && o < out ? o : -1;
    }
    case PadMode::Circular: {
      const std::int64_t a = left < 0 ? -left : 0;
      const std::int64_t b = n - (right < 0 ? -right : 0);
      const std::int64_t m = b - a;
      if (s < a || s >= b) return -1;  // cropped away
      // Every output congruent to this one modulo the wrapped range m.
      const std::int64_t first = ((left > 0 ? left : 0) + (s - a)) % m;
      const std::int64_t o = prev < first ? first : first + ((prev - first) / m + 1) * m;
      return o < out ? o : -1;
    }
  }
  return -1;
}

constexpr int kMaxPadDims = 16;

// PadPlan in fixed arrays (a CUDA kernel argument), with the strides of the gathered-from tensor
// (`src`) and of the indexed-by-output tensor (`dst`).
struct PadGeometry {
  int nd = 0;
  PadMode mode = PadMode::Constant;
  std::int64_t in[kMaxPadDims] = {}, out[kMaxPadDims] = {};
  std::int64_t left[kMaxPadDims] = {}, right[kMaxPadDims] = {};
  std::int64_t src_strides[kMaxPadDims] = {}, dst_strides[kMaxPadDims] = {};

  // Offsets of output element `linear` in dst and of its source in src; false in a border.
  QGRAD_HD bool offsets(std::int64_t linear, std::int64_t& dst, std::int64_t& src) const {
    dst = 0;
    src = 0;
    bool inside = true;
    for (int d = nd - 1; d >= 0; --d) {
      const std::int64_t o = linear % out[d];
      linear /= out[d];
      dst += o * dst_strides[d];
      const std::int64_t s = source_index(mode, in[d], left[d], right[d], o);
      if (s < 0) inside = false;
      src += s * src_strides[d];
    }
    return inside;
  }

  // The gradient of input element `linear` (row-major over in[]): the sum of the output
  // gradients g (dst strides) of every output copied from it, added in ascending output order
  // (an odometer over the dims' next_output sequences, the last dim fastest) from T(0).
  template <typename T>
  QGRAD_HD T gather(const T* g, std::int64_t linear) const {
    std::int64_t s[kMaxPadDims], o[kMaxPadDims];
    for (int d = nd - 1; d >= 0; --d) {
      s[d] = linear % in[d];
      linear /= in[d];
    }
    for (int d = 0; d < nd; ++d) {
      o[d] = next_output(mode, in[d], left[d], right[d], out[d], s[d], -1);
      if (o[d] < 0) return T(0);  // cropped away: no output copies it
    }
    T acc = T(0);
    for (;;) {
      std::int64_t off = 0;
      for (int d = 0; d < nd; ++d) off += o[d] * dst_strides[d];
      acc += g[off];
      int d = nd - 1;
      for (; d >= 0; --d) {
        const std::int64_t next = next_output(mode, in[d], left[d], right[d], out[d], s[d], o[d]);
        if (next >= 0) {
          o[d] = next;
          break;
        }
        o[d] = next_output(mode, in[d], left[d], right[d], out[d], s[d], -1);
      }
      if (d < 0) return acc;
    }
  }
};

// The geometry of `p` with the strides of its two tensors.
inline PadGeometry make_geometry(const char* op, const PadPlan& p, const Shape& src_strides,
                                 const Shape& dst_strides) {
  const std::size_t nd = p.out_shape.size();
  QGRAD_CHECK(nd <= static_cast<std::size_t>(kMaxPadDims), ShapeError, op, ": at most ",
              kMaxPadDims, " dims, got ", nd);
  PadGeometry g;
  g.nd = static_cast<int>(nd);
  g.mode = p.mode;
  for (std::size_t d = 0; d < nd; ++d) {
    g.in[d] = p.in_shape[d];
    g.out[d] = p.out_shape[d];
    g.left[d] = p.left[d];
    g.right[d] = p.right[d];
    g.src_strides[d] = src_strides[d];
    g.dst_strides[d] = dst_strides[d];
  }
  return g;
}

}  // namespace qgrad::pad_elem
