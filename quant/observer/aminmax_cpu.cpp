// CPU min/max reductions for observers, registered in the "observer.aminmax*" tables. Work is split
// into a size-determined number of chunks whose partial results are combined in order (min/max
// are exact, so only NaN tracking needs care).
#include "quant/observer/aminmax_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/channel_loop.h"
#include "core/strided_loop.h"

namespace qgrad::ao {

namespace {

constexpr std::int64_t kMaxChunks = 64;
constexpr std::int64_t kMinChunk = 32768;

std::int64_t chunk_count(std::int64_t n) {
  return std::max<std::int64_t>(1, std::min(kMaxChunks, (n + kMinChunk - 1) / kMinChunk));
}

struct Acc {
  float mn = std::numeric_limits<float>::infinity();
  float mx = -std::numeric_limits<float>::infinity();
  bool nan = false;
  void add_row(const float* p, std::int64_t n) {
    float a = mn, b = mx;
    bool has_nan = false;
    for (std::int64_t i = 0; i < n; ++i) {
      const float v = p[i];
      has_nan |= (v != v);
      a = v < a ? v : a;
      b = v > b ? v : b;
    }
    mn = a;
    mx = b;
    nan = nan || has_nan;
  }
  void merge(const Acc& o) {
    mn = std::min(mn, o.mn);
    mx = std::max(mx, o.mx);
    nan = nan || o.nan;
  }
  MinMax result() const {
    if (nan)
      return {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::quiet_NaN()};
    return {mn, mx};
  }
};

// x as contiguous float32 (the precision of the observers' statistics).
Tensor as_float32(const Tensor& x) {
  return (x.dtype() == kFloat32 ? x : x.to(kFloat32)).contiguous();
}

MinMax aminmax_cpu(const Tensor& x) {
  const Tensor xc = as_float32(x);
  const float* p = xc.data_ptr<float>();
  const std::int64_t n = xc.numel();
  const std::int64_t K = chunk_count(n);
  const std::int64_t chunk = (n + K - 1) / K;
  std::vector<Acc> parts(static_cast<std::size_t>(K));
  parallel_for(K, 2, [&](std::int64_t k0, std::int64_t k1) {
    for (std::int64_t k = k0; k < k1; ++k) {
      const std::int64_t b = k * chunk, e = std::min(n, b + chunk);
      if (b < e) parts[static_cast<std::size_t>(k)].add_row(p + b, e - b);
    }
  });
  Acc total;
  for (const Acc& a : parts) total.merge(a);
  return total.result();
}

std::vector<MinMax> aminmax_per_channel_cpu(const Tensor& x, std::int64_t axis) {
  const Tensor xc = as_float32(x);
  const float* p = xc.data_ptr<float>();
  ChannelLoop loop(xc.shape(), axis);
  const std::size_t C = static_cast<std::size_t>(loop.channels);
  const std::int64_t rows = loop.rows();
  const std::int64_t K = chunk_count(loop.numel());
  const std::int64_t chunk_rows = (rows + K - 1) / K;
  std::vector<Acc> parts(static_cast<std::size_t>(K) * C);
  parallel_for(K, 2, [&](std::int64_t k0, std::int64_t k1) {
    for (std::int64_t k = k0; k < k1; ++k) {
      Acc* acc = parts.data() + static_cast<std::size_t>(k) * C;
      const std::int64_t r0 = k * chunk_rows, r1 = std::min(rows, r0 + chunk_rows);
      loop.run_rows(r0, r1, [&](std::int64_t c, std::int64_t off, std::int64_t n) {
        acc[c].add_row(p + off, n);
      });
    }
  });
  std::vector<MinMax> out(C);
  for (std::size_t c = 0; c < C; ++c) {
    Acc total;
    for (std::int64_t k = 0; k < K; ++k) total.merge(parts[static_cast<std::size_t>(k) * C + c]);
    out[c] = total.result();
  }
  return out;
}

void aminmax_into_cpu(const Tensor& x, std::int64_t axis, const Tensor& min, const Tensor& max) {
  float* pn = min.data_ptr<float>();
  float* px = max.data_ptr<float>();
  if (axis < 0) {
    const MinMax r = aminmax_cpu(x);
    *pn = r.min;
    *px = r.max;
  } else {
    const std::vector<MinMax> r = aminmax_per_channel_cpu(x, axis);
    for (std::size_t c = 0; c < r.size(); ++c) {
      pn[c] = r[c].min;
      px[c] = r[c].max;
    }
  }
  min.bump_version();
  max.bump_version();
}

}  // namespace

void register_aminmax_cpu_kernels(KernelRegistry& r) {
  r.table(kAminmaxIntoKernels).define(DeviceType::CPU, &aminmax_into_cpu, kFloatingDTypes);
  r.table(kAminmaxKernels).define(DeviceType::CPU, &aminmax_cpu, kFloatingDTypes);
  r.table(kAminmaxPerChannelKernels)
      .define(DeviceType::CPU, &aminmax_per_channel_cpu, kFloatingDTypes);
}

}  // namespace qgrad::ao
