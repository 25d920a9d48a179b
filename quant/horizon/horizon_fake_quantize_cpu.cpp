// CPU kernels of Horizon's fake quantization: horizon_fake_quantize_elem.h's element (x / scale,
// rounded half to even or half up, clamped, multiplied back) per tensor or per channel, driven by
// the fake quantizers' shared value + mask loop (quant/value_mask_loop.h). Registered in the
// "horizon.fake_quantize_*" tables.
#include "quant/horizon/horizon_fake_quantize_kernels.h"

#include <vector>

#include "core/dtype.h"
#include "quant/horizon/horizon_fake_quantize_elem.h"
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

}  // namespace

void register_horizon_fake_quantize_cpu_kernels(KernelRegistry& r) {
  r.table(kHorizonFakeQuantizePerTensorKernels)
      .define(DeviceType::CPU, &fake_quantize_per_tensor_cpu, kFloatingDTypes);
  r.table(kHorizonFakeQuantizePerChannelKernels)
      .define(DeviceType::CPU, &fake_quantize_per_channel_cpu, kFloatingDTypes);
}

}  // namespace qgrad::horizon
