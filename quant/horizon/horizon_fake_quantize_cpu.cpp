// CPU kernels of Horizon's fake quantization: horizon_fake_quantize_elem.h's element (x / scale,
// rounded half to even or half up, clamped, multiplied back) per tensor or per channel, driven by
// the fake quantizers' shared value + mask loop (quant/value_mask_loop.h); and the scale-tensor
// kernels the GPU runs (horizon_fake_quantize_scale_kernel.h through cpu::Map), their reference
// here. Registered in the "horizon.*" tables.
#include "quant/horizon/horizon_fake_quantize_kernels.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/cpu_map.h"
#include "core/dtype.h"
#include "quant/horizon/horizon_fake_quantize_elem.h"
#include "quant/horizon/horizon_fake_quantize_scale_kernel.h"
#include "quant/value_mask_loop.h"

namespace qgrad::horizon {

namespace {

template <typename T, RoundMode M>
FakeQuantizeElem<T, M> make_elem(double scale, QRange r) {
  return {static_cast<T>(scale), static_cast<T>(r.quant_min), static_cast<T>(r.quant_max)};
}

template <typename T, RoundMode M>
void per_tensor(const Tensor& x, double scale, QRange r, const Tensor& y, const Tensor& mask) {
  quant::value_mask_map<T>(make_elem<T, M>(scale, r), x, y, mask);
}

template <typename T, RoundMode M>
void per_channel(const Tensor& x, std::int64_t axis, const std::vector<double>& scale, QRange r,
                 const Tensor& y, const Tensor& mask) {
  std::vector<FakeQuantizeElem<T, M>> elems;
  for (double s : scale) elems.push_back(make_elem<T, M>(s, r));
  quant::value_mask_map_channels<T>(elems, x, axis, y, mask);
}

void fake_quantize_per_tensor_cpu(const Tensor& x, double scale, QRange r, RoundMode mode,
                                  const Tensor& y, const Tensor& mask) {
  if (y.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(x.dtype(), "horizon.fake_quantize", [&] {
    if (mode == RoundMode::HalfToEven)
      per_tensor<scalar_t, RoundMode::HalfToEven>(x, scale, r, y, mask);
    else
      per_tensor<scalar_t, RoundMode::HalfUp>(x, scale, r, y, mask);
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

void fake_quantize_scale_tensor_cpu(const Tensor& x, const Tensor& scale, std::int64_t axis,
                                    QRange range, RoundMode mode, const Tensor& y,
                                    const Tensor& mask) {
  fake_quantize_scale_tensor<cpu::Map>(x, scale, axis, range, mode, y, mask);
}

void scale_from_statistics_cpu(const char* owner, const Tensor& min, const Tensor& max,
                               const Tensor& previous, float half_range, const Tensor& scale) {
  const std::vector<float> mn = min.to_vector<float>(), mx = max.to_vector<float>();
  for (std::size_t c = 0; c < mn.size(); ++c)
    QGRAD_CHECK(statistics_usable(mn[c], mx[c]), ValueError, owner,
                ": the observer's statistics must be finite, got min ", mn[c], " max ", mx[c],
                mn.size() > 1 ? " in channel " + std::to_string(c) : std::string());
  scale_from_statistics_values<cpu::Map>(min, max, previous, half_range, scale);
}

}  // namespace

void register_horizon_fake_quantize_cpu_kernels(KernelRegistry& r) {
  r.table(kHorizonFakeQuantizeScaleTensorKernels)
      .define(DeviceType::CPU, &fake_quantize_scale_tensor_cpu, kFloatingDTypes);
  r.table(kHorizonScaleFromStatisticsKernels)
      .define(DeviceType::CPU, &scale_from_statistics_cpu, DTypeSet{kFloat32});
  r.table(kHorizonFakeQuantizePerTensorKernels)
      .define(DeviceType::CPU, &fake_quantize_per_tensor_cpu, kFloatingDTypes);
  r.table(kHorizonFakeQuantizePerChannelKernels)
      .define(DeviceType::CPU, &fake_quantize_per_channel_cpu, kFloatingDTypes);
}

}  // namespace qgrad::horizon
