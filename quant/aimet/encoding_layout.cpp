// The [outer, channels, inner] view of x for an AIMET encoding shape.
#include "quant/aimet/encoding_layout.h"

#include <vector>

namespace qgrad::aimet {

std::optional<EncodingLayout> encoding_layout(const Shape& x, const Shape& encoding) {
  const std::size_t n = x.size(), k = encoding.size();
  if (k > n || numel_of(x) == 0) return std::nullopt;
  // A channel dim is one where the encoding has x's (non-trivial) size; elsewhere it has 1.
  std::vector<bool> channel(n, false);
  std::int64_t first = -1, last = -1;
  for (std::size_t d = 0; d < n; ++d) {
    const std::int64_t e = d + k >= n ? encoding[d + k - n] : 1;
    if (x[d] > 1 && e == x[d]) {
      channel[d] = true;
      if (first < 0) first = static_cast<std::int64_t>(d);
      last = static_cast<std::int64_t>(d);
    } else if (e != 1) {
      return std::nullopt;
    }
  }
  EncodingLayout l;
  if (first < 0) {
    l.inner = numel_of(x);
    return l;
  }
  // Broadcast dims (size > 1) between channel dims would interleave channels in memory.
  for (std::int64_t d = first; d <= last; ++d)
    if (x[static_cast<std::size_t>(d)] > 1 && !channel[static_cast<std::size_t>(d)])
      return std::nullopt;
  for (std::int64_t d = 0; d < static_cast<std::int64_t>(n); ++d) {
    const std::int64_t s = x[static_cast<std::size_t>(d)];
    if (d < first)
      l.outer *= s;
    else if (d <= last)
      l.channels *= s;
    else
      l.inner *= s;
  }
  return l;
}

}  // namespace qgrad::aimet
