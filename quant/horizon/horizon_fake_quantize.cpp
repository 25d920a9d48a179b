// Horizon fake quantization: checks, dispatch to the per-tensor / per-channel kernels through the
// "horizon.fake_quantize_*" tables, and the saturating (torch.ao's masked gradient) or plain
// straight-through backward.
#include "quant/horizon/horizon_fake_quantize.h"

#include "core/autograd/function.h"
#include "core/factory.h"
#include "ops/device_check.h"
#include "quant/horizon/horizon_fake_quantize_kernels.h"
#include "quant/torch_ao/fake_quantize_kernels.h"
#include "quant/torch_ao/qparam_checks.h"

namespace qgrad::horizon {

using ao::check_scale_value;
using ao::normalize_channel_axis;
using ao::per_channel_floats;
using ao::single_float;

namespace {

// The backward: saturating, torch.ao's masked gradient; else dy itself.
void record_backward(const char* op, const Tensor& x, Tensor& y, const Tensor& mask,
                     bool saturate) {
  if (saturate) {
    record("HorizonFakeQuantizeBackward", {x}, {&y}, [op, mask](const TensorList& g) {
      static const KernelTable<ao::MaskedGradientKernel>& masked =
          kernel_table(ao::kMaskedGradientKernels);
      Tensor dx = empty(g[0].shape(), TensorOptions().dtype(g[0].dtype()).device(g[0].device()));
      masked(op, g[0])(g[0], mask, dx);
      return TensorList{dx};
    });
  } else {
    record("HorizonFakeQuantizeBackward", {x}, {&y},
           [](const TensorList& g) { return TensorList{g[0]}; });
  }
}

}  // namespace

Tensor fake_quantize_device_scale(const Tensor& x, const Tensor& scale, QDType dtype,
                                  std::optional<std::int64_t> ch_axis, RoundMode round_mode,
                                  bool saturate) {
  static const KernelTable<HorizonFakeQuantizeScaleTensorKernel>& table =
      kernel_table(kHorizonFakeQuantizeScaleTensorKernels);
  static const KernelTable<ao::CheckQParamsKernel>& checks = kernel_table(ao::kCheckQParamsKernels);
  const char* op = "horizon.fake_quantize";
  require_floating(op, "input", x);
  HorizonFakeQuantizeScaleTensorKernel& kernel = table(op, x);
  const QRange range = quant_range(dtype);
  const std::int64_t axis = ch_axis ? normalize_channel_axis(op, x, *ch_axis) : -1;
  const std::int64_t n = axis < 0 ? 1 : x.size(axis);
  require_defined(op, "scale", scale);
  QGRAD_CHECK(scale.device() == x.device(), DeviceError, op,
              ": scale must be on the input's device (", x.device(), "), got ", scale.device());
  QGRAD_CHECK(is_floating(scale.dtype()), DTypeError, op, ": scale must be floating, got ",
              dtype_name(scale.dtype()));
  QGRAD_CHECK(axis < 0 ? scale.numel() == 1 : scale.dim() == 1 && scale.numel() == n, ShapeError,
              op, ": scale must hold ", n, n == 1 ? " element" : " elements, one per channel",
              ", got shape ", scale.shape());
  // Detached, so the conversion records no autograd (a NoGradGuard would stop the backward's too).
  const Tensor s = scale.detach().to(kFloat32).reshape({n}).contiguous();
  checks(op, s)(op, s, zeros({n}, TensorOptions().dtype(kInt32).device(x.device())), false,
                range.quant_min, range.quant_max);
  const bool grad = needs_grad({x});
  Tensor y = empty(x.shape(), TensorOptions().dtype(x.dtype()).device(x.device()));
  Tensor mask = grad && saturate
                    ? empty(x.shape(), TensorOptions().dtype(kUInt8).device(x.device()))
                    : Tensor();
  kernel(x.detach(), s, axis, range, round_mode, y, mask);
  if (grad) record_backward(op, x, y, mask, saturate);
  return y;
}

Tensor fake_quantize(const Tensor& x, const Tensor& scale, QDType dtype,
                     std::optional<std::int64_t> ch_axis, RoundMode round_mode, bool saturate) {
  static const KernelTable<HorizonFakeQuantizePerTensorKernel>& per_tensor =
      kernel_table(kHorizonFakeQuantizePerTensorKernels);
  static const KernelTable<HorizonFakeQuantizePerChannelKernel>& per_channel =
      kernel_table(kHorizonFakeQuantizePerChannelKernels);
  const char* op = "horizon.fake_quantize";
  require_floating(op, "input", x);
  if (!x.device().is_cpu())
    return fake_quantize_device_scale(x, scale, dtype, ch_axis, round_mode, saturate);
  // The device check comes before the scale is read on the host.
  if (ch_axis)
    per_channel(op, x);
  else
    per_tensor(op, x);
  const QRange range = quant_range(dtype);
  const bool grad = needs_grad({x});
  const bool want_mask = grad && saturate;
  Tensor y = empty(x.shape(), TensorOptions().dtype(x.dtype()).device(x.device()));
  Tensor mask =
      want_mask ? empty(x.shape(), TensorOptions().dtype(kUInt8).device(x.device())) : Tensor();
  if (ch_axis) {
    const std::int64_t ax = normalize_channel_axis(op, x, *ch_axis);
    const std::vector<double> s = per_channel_floats(op, "scale", scale, x.size(ax));
    for (double v : s) check_scale_value(op, "scale", static_cast<double>(static_cast<float>(v)));
    per_channel(op, x)(x.detach().contiguous(), ax, s, range, round_mode, y, mask);
  } else {
    const double s = single_float(op, "scale", scale);
    check_scale_value(op, "scale", x.dtype() == kFloat32 ? static_cast<float>(s) : s);
    per_tensor(op, x)(x, s, range, round_mode, y, mask);
  }
  if (grad) record_backward(op, x, y, mask, saturate);
  return y;
}

}  // namespace qgrad::horizon
