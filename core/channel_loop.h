// ChannelLoop: a contiguous tensor seen as [outer, channels, inner] around a channel axis, and
// loops over its rows (one channel, `inner` contiguous elements each). The channel of a row is
// tracked by counting, so per-channel quantization kernels never divide per element. Used by the
// torch.ao, Horizon and observer kernels (quant/value_mask_loop.h, quant/observer); in core so that
// every layer with per-channel kernels can use it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/shape.h"
#include "core/strided_loop.h"

namespace qgrad {

struct ChannelLoop {
  std::int64_t outer = 1;
  std::int64_t channels = 1;
  std::int64_t inner = 1;

  // `axis` must already be normalised to [0, shape.size()).
  ChannelLoop(const Shape& shape, std::int64_t axis) {
    for (std::int64_t d = 0; d < static_cast<std::int64_t>(shape.size()); ++d) {
      if (d < axis) outer *= shape[d];
      if (d == axis) channels = shape[d];
      if (d > axis) inner *= shape[d];
    }
  }

  std::int64_t rows() const { return outer * channels; }
  std::int64_t numel() const { return outer * channels * inner; }

  // f(channel, element_offset, count) for rows [r0, r1), serially.
  template <typename F>
  void run_rows(std::int64_t r0, std::int64_t r1, F&& f) const {
    if (r0 >= r1 || channels == 0) return;
    std::int64_t c = r0 % channels;
    for (std::int64_t r = r0; r < r1; ++r) {
      f(c, r * inner, inner);
      if (++c == channels) c = 0;
    }
  }

  // The same over all rows, split across threads when the tensor is large.
  template <typename F>
  void run(F&& f) const {
    const std::int64_t grain =
        std::max<std::int64_t>(1, kParallelGrain / std::max<std::int64_t>(inner, 1));
    parallel_for(rows(), grain, [&](std::int64_t r0, std::int64_t r1) { run_rows(r0, r1, f); });
  }
};

}  // namespace qgrad
