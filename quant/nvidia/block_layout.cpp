// Building a BlockLayout: clamp block sizes, drop size-1 axes, merge neighbouring axes whose
// blocks stay contiguous runs of memory.
#include "quant/nvidia/block_layout.h"

#include <algorithm>

namespace qgrad::nvidia {

BlockLayout make_block_layout(const Shape& shape, const Shape& block) {
  BlockLayout L;
  L.numel = numel_of(shape);
  Shape d, b;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    const std::int64_t dk = shape[k];
    const std::int64_t bk =
        (block[k] <= 0 || block[k] >= dk) ? std::max<std::int64_t>(dk, 1) : block[k];
    L.grid_shape.push_back(dk == 0 ? 0 : (dk + bk - 1) / bk);
    if (dk == 1) continue;
    // Axis k+1 joins axis k when it is a single block (its blocks then tile axis k's blocks
    // contiguously), or when both axes are per-element.
    if (!d.empty() && (bk == dk || (b.back() == 1 && bk == 1))) {
      d.back() *= dk;
      b.back() *= bk;
    } else {
      d.push_back(dk);
      b.push_back(bk);
    }
  }
  if (d.empty()) {
    d.push_back(L.numel == 0 ? 0 : 1);
    b.push_back(1);
  }
  L.dims = d;
  L.block = b;
  L.grid_strides.assign(d.size(), 1);
  std::int64_t gs = 1;
  for (std::size_t k = d.size(); k-- > 0;) {
    L.grid_strides[k] = gs;
    gs *= d[k] == 0 ? 0 : (d[k] + b[k] - 1) / b[k];
  }
  L.grid_numel = numel_of(L.grid_shape);
  return L;
}

}  // namespace qgrad::nvidia
