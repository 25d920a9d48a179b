// CPU kernels of Horizon's fake quantization. Each element divides by the scale (x / scale, not
// x * (1/scale)), rounds (half to even with std::nearbyint, or half up as floor(v + 0.5)),
// clamps in float and multiplies back; NaN passes through the clamp unchanged. Registered in the
// "horizon.fake_quantize_*" tables.
#include "quant/horizon/horizon_fake_quantize_kernels.h"

#include <cmath>

#include "core/dtype.h"
#include "core/strided_loop.h"
#include "quant/torch_ao/channel_loop.h"

namespace qgrad::horizon {

using ao::ChannelLoop;

namespace {

template <typename T, RoundMode M>
struct Elem {
  T scale, qmin, qmax;
  T rounded(T x) const {
    const T v = x / scale;
    if constexpr (M == RoundMode::HalfToEven) {
      return std::nearbyint(v);
    } else {
      return std::floor(v + T(0.5));
    }
  }
  T operator()(T x, std::uint8_t& m) const {
    const T r = rounded(x);
    m = static_cast<std::uint8_t>((r >= qmin) & (r <= qmax));
    return (r < qmin ? qmin : (r > qmax ? qmax : r)) * scale;
  }
  T operator()(T x) const {
    const T r = rounded(x);
    return (r < qmin ? qmin : (r > qmax ? qmax : r)) * scale;
  }
};

template <typename T, typename E>
void run_strided(const Tensor& x, const Tensor& y, const Tensor& mask, const E& elem) {
  const T* px = static_cast<const T*>(x.raw_data());
  T* py = static_cast<T*>(y.raw_data());
  if (mask.defined()) {
    std::uint8_t* pm = static_cast<std::uint8_t*>(mask.raw_data());
    StridedLoop<3> loop(y.shape(), {y.strides(), mask.strides(), x.strides()}, {0, 0, 0});
    loop.run([&](const std::array<std::int64_t, 3>& off, std::int64_t n,
                 const std::array<std::int64_t, 3>& st) {
      // Local copies and restrict: the uint8 mask stores could otherwise alias the parameters.
      const E e = elem;
      T* __restrict__ o = py + off[0];
      std::uint8_t* __restrict__ m = pm + off[1];
      const T* __restrict__ a = px + off[2];
      if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
        for (std::int64_t i = 0; i < n; ++i) o[i] = e(a[i], m[i]);
      } else {
        for (std::int64_t i = 0; i < n; ++i) o[i * st[0]] = e(a[i * st[2]], m[i * st[1]]);
      }
    });
    return;
  }
  StridedLoop<2> loop(y.shape(), {y.strides(), x.strides()}, {0, 0});
  loop.run([&](const std::array<std::int64_t, 2>& off, std::int64_t n,
               const std::array<std::int64_t, 2>& st) {
    const E e = elem;
    T* __restrict__ o = py + off[0];
    const T* __restrict__ a = px + off[1];
    if (st[0] == 1 && st[1] == 1) {
      for (std::int64_t i = 0; i < n; ++i) o[i] = e(a[i]);
    } else {
      for (std::int64_t i = 0; i < n; ++i) o[i * st[0]] = e(a[i * st[1]]);
    }
  });
}

template <typename T, RoundMode M>
void per_channel(const Tensor& x, std::int64_t axis, const std::vector<double>& scale, QRange r,
                 const Tensor& y, const Tensor& mask) {
  std::vector<Elem<T, M>> elems;
  for (double s : scale)
    elems.push_back({static_cast<T>(s), static_cast<T>(r.quant_min), static_cast<T>(r.quant_max)});
  const T* px = static_cast<const T*>(x.raw_data());
  T* py = static_cast<T*>(y.raw_data());
  std::uint8_t* pm = mask.defined() ? static_cast<std::uint8_t*>(mask.raw_data()) : nullptr;
  ChannelLoop(x.shape(), axis).run([&](std::int64_t c, std::int64_t off, std::int64_t n) {
    // Local restrict pointers: the uint8 mask stores could otherwise alias x and y, which
    // keeps the compiler from vectorising the masked loop.
    const Elem<T, M> e = elems[static_cast<std::size_t>(c)];
    T* __restrict__ o = py + off;
    const T* __restrict__ a = px + off;
    if (pm) {
      std::uint8_t* __restrict__ m = pm + off;
      for (std::int64_t i = 0; i < n; ++i) o[i] = e(a[i], m[i]);
    } else {
      for (std::int64_t i = 0; i < n; ++i) o[i] = e(a[i]);
    }
  });
}

void fake_quantize_per_tensor_cpu(const Tensor& x, double scale, QRange r, RoundMode mode,
                                  const Tensor& y, const Tensor& mask) {
  if (y.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(x.dtype(), "horizon.fake_quantize", [&] {
    using T = scalar_t;
    const T s = static_cast<T>(scale), lo = static_cast<T>(r.quant_min),
            hi = static_cast<T>(r.quant_max);
    if (mode == RoundMode::HalfToEven)
      run_strided<T>(x, y, mask, Elem<T, RoundMode::HalfToEven>{s, lo, hi});
    else
      run_strided<T>(x, y, mask, Elem<T, RoundMode::HalfUp>{s, lo, hi});
  });
}

void fake_quantize_per_channel_cpu(const Tensor& x, std::int64_t axis,
                                   const std::vector<double>& scale, QRange r, RoundMode mode,
                                   const Tensor& y, const Tensor& mask) {
  if (y.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(x.dtype(), "horizon.fake_quantize", [&] {
    if (mode == RoundMode::HalfToEven)
      per_channel<scalar_t, RoundMode::HalfToEven>(x, axis, scale, r, y, mask);
    else
      per_channel<scalar_t, RoundMode::HalfUp>(x, axis, scale, r, y, mask);
  });
}

}  // namespace

void register_horizon_fake_quantize_cpu_kernels(KernelRegistry& r) {
  r.table(kHorizonFakeQuantizePerTensorKernels)
      .define(DeviceType::CPU, &fake_quantize_per_tensor_cpu, kFloatingDTypes);
  r.table(kHorizonFakeQuantizePerChannelKernels)
      .define(DeviceType::CPU, &fake_quantize_per_channel_cpu, kFloatingDTypes);
}

}  // namespace qgrad::horizon
