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

Tensor fake_quantize(const Tensor& x, const Tensor& scale, QDType dtype,
                     std::optional<std::int64_t> ch_axis, RoundMode round_mode, bool saturate) {
  static const KernelTable<HorizonFakeQuantizePerTensorKernel>& per_tensor =
      kernel_table(kHorizonFakeQuantizePerTensorKernels);
  static const KernelTable<HorizonFakeQuantizePerChannelKernel>& per_channel =
      kernel_table(kHorizonFakeQuantizePerChannelKernels);
  const char* op = "horizon.fake_quantize";
  require_floating(op, "input", x);
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
  if (!grad) return y;
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
  return y;
}

}  // namespace qgrad::horizon
