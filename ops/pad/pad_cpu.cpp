// CPU padding. The output is walked row by row (rows = all dims but the last): each row's
// source row is found by mapping every outer index through the mode's index rule, then the
// row is the mapped border on each side and a straight strided copy in the middle. The
// backward of the mapping modes adds each gradient row into its source row; rows are split
// across threads by their leading unpadded dims (batch, channels), so no two threads ever add
// into the same input element.
#include "ops/pad/pad_kernels.h"

#include <algorithm>
#include <vector>

#include "core/strided_loop.h"
#include "ops/pad/pad_elem.h"

namespace qgrad {

namespace {

// Source index of output index `o` along dim `d`, or -1 when it falls in a constant border.
std::int64_t source_index(const PadPlan& p, std::size_t d, std::int64_t o) {
  return pad_elem::source_index(p.mode, p.in_shape[d], p.left[d], p.right[d], o);
}

// Offset (in elements, with `strides`) of the source row of output row `r`; -1 when the row
// lies in a constant border.
std::int64_t source_row(const PadPlan& p, const Shape& strides, std::int64_t r) {
  std::int64_t off = 0;
  for (std::size_t d = p.out_shape.size() - 1; d-- > 0;) {
    const std::int64_t o = r % p.out_shape[d];
    r /= p.out_shape[d];
    const std::int64_t s = source_index(p, d, o);
    if (s < 0) return -1;
    off += s * strides[d];
  }
  return off;
}

// Offset of output row `r` in a tensor of out_shape with `strides`.
std::int64_t output_row(const PadPlan& p, const Shape& strides, std::int64_t r) {
  std::int64_t off = 0;
  for (std::size_t d = p.out_shape.size() - 1; d-- > 0;) {
    off += (r % p.out_shape[d]) * strides[d];
    r /= p.out_shape[d];
  }
  return off;
}

struct LastDim {
  std::vector<std::int64_t> src;  // source index of each output column (-1: constant border)
  std::int64_t mid_begin = 0, mid_end = 0;  // columns copied straight: src = j - left
  std::int64_t left = 0;
};

LastDim last_dim_map(const PadPlan& p) {
  const std::size_t d = p.out_shape.size() - 1;
  LastDim m;
  const std::int64_t W = p.out_shape[d];
  m.left = p.left[d];
  m.src.resize(static_cast<std::size_t>(W));
  for (std::int64_t j = 0; j < W; ++j) m.src[static_cast<std::size_t>(j)] = source_index(p, d, j);
  m.mid_begin = std::clamp<std::int64_t>(m.left, 0, W);
  m.mid_end = std::clamp<std::int64_t>(m.left + p.in_shape[d], m.mid_begin, W);
  return m;
}

template <typename T>
void pad_forward_typed(const Tensor& x, const PadPlan& p, T value, const Tensor& out) {
  const T* px = static_cast<const T*>(x.raw_data());
  T* po = out.data_ptr<T>();
  if (x.numel() == 0) {  // every output element is border; no row of x exists (px may be null)
    std::fill(po, po + out.numel(), value);
    return;
  }
  const Shape& xs = x.strides();
  const std::size_t nd = p.out_shape.size();
  const std::int64_t W = p.out_shape[nd - 1], sx = xs[nd - 1];
  const std::int64_t rows = out.numel() / W;
  const LastDim m = last_dim_map(p);
  const std::int64_t grain = std::max<std::int64_t>(1, kParallelGrain / W);
  parallel_for(rows, grain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) {
      T* orow = po + r * W;
      const std::int64_t off = source_row(p, xs, r);
      if (off < 0) {
        std::fill(orow, orow + W, value);
        continue;
      }
      const T* xrow = px + off;
      for (std::int64_t j = 0; j < m.mid_begin; ++j) {
        const std::int64_t s = m.src[static_cast<std::size_t>(j)];
        orow[j] = s < 0 ? value : xrow[s * sx];
      }
      const T* xmid = xrow + (m.mid_begin - m.left) * sx;
      T* omid = orow + m.mid_begin;
      const std::int64_t len = m.mid_end - m.mid_begin;
      if (sx == 1) {
        std::copy(xmid, xmid + len, omid);
      } else {
        for (std::int64_t j = 0; j < len; ++j) omid[j] = xmid[j * sx];
      }
      for (std::int64_t j = m.mid_end; j < W; ++j) {
        const std::int64_t s = m.src[static_cast<std::size_t>(j)];
        orow[j] = s < 0 ? value : xrow[s * sx];
      }
    }
  });
}

template <typename T>
void pad_backward_typed(const Tensor& g, const PadPlan& p, const Tensor& grad_in) {
  const T* pg = static_cast<const T*>(g.raw_data());
  T* pgx = grad_in.data_ptr<T>();
  const Shape& gs = g.strides();
  const Shape& ins = grad_in.strides();
  const std::size_t nd = p.out_shape.size();
  const std::int64_t W = p.out_shape[nd - 1], sg = gs[nd - 1];
  // Leading dims that are not padded map one to one: they index independent planes.
  std::size_t lead = 0;
  while (lead + 1 < nd && p.left[lead] == 0 && p.right[lead] == 0) ++lead;
  std::int64_t planes = 1, rows_per_plane = 1;
  for (std::size_t d = 0; d < lead; ++d) planes *= p.out_shape[d];
  for (std::size_t d = lead; d + 1 < nd; ++d) rows_per_plane *= p.out_shape[d];
  const LastDim m = last_dim_map(p);
  const std::int64_t grain = std::max<std::int64_t>(1, kParallelGrain / (rows_per_plane * W));
  parallel_for(planes, grain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b * rows_per_plane; r < e * rows_per_plane; ++r) {
      T* xrow = pgx + source_row(p, ins, r);
      const T* grow = pg + output_row(p, gs, r);
      for (std::int64_t j = 0; j < W; ++j) xrow[m.src[static_cast<std::size_t>(j)]] += grow[j * sg];
    }
  });
}

void pad_cpu(const Tensor& x, const PadPlan& plan, double value, const Tensor& out) {
  if (out.numel() == 0) return;
  QGRAD_DISPATCH_ALL(x.dtype(), "pad", [&] {
    pad_forward_typed<scalar_t>(x, plan, static_cast<scalar_t>(value), out);
  });
}

void pad_backward_cpu(const Tensor& g, const PadPlan& plan, const Tensor& grad_in) {
  if (g.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(g.dtype(), "pad backward",
                       [&] { pad_backward_typed<scalar_t>(g, plan, grad_in); });
}

}  // namespace

void register_pad_cpu_kernels(KernelRegistry& r) {
  r.table(kPadKernels).define(DeviceType::CPU, &pad_cpu, kAllDTypes);
  r.table(kPadBackwardKernels).define(DeviceType::CPU, &pad_backward_cpu, kFloatingDTypes);
}

}  // namespace qgrad
