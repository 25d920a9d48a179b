// BlockLayout: how a tensor is cut into quantization blocks, each with its own amax/scale. Every
// granularity of the NVIDIA quantizers is one case of it: axis k is cut into blocks of block[k]
// elements (the last one may be partial: the reference zero-pads it, which never changes a
// |x|-max, so qgrad simply uses the elements that exist). Per-tensor: block = shape; per-channel
// on axis 0: block = {1, d1, d2, ...}; modelopt block_sizes {-1: 32}: block = {1, ..., 1, 32}.
// The per-block values live in a "grid" tensor of shape ceil(shape / block) (keepdim layout, so
// per-channel amax [C,1,1,1] is a grid). Axes are coalesced so the kernels run over long rows.
#pragma once

#include <cstdint>

#include "core/shape.h"

namespace qgrad::nvidia {

struct BlockLayout {
  Shape dims;          // coalesced dims of the tensor (at least one)
  Shape block;         // block size along each coalesced dim
  Shape grid_strides;  // row-major strides of the grid over the coalesced dims
  Shape grid_shape;    // the grid at the tensor's own rank: ceil(shape[k] / block[k])
  std::int64_t numel = 0;
  std::int64_t grid_numel = 0;
};

// `block` has one entry per axis of `shape`; entries >= the dim (or <= 0) mean the whole axis.
BlockLayout make_block_layout(const Shape& shape, const Shape& block);

}  // namespace qgrad::nvidia
