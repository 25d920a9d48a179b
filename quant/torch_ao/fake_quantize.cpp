// torch.ao fake quantization: argument checks, dispatch through the "torch_ao.*" kernel tables and
// the masked straight-through backward (the forward saves a uint8 mask, so the backward is one
// pass over dy and the mask).
#include "quant/torch_ao/fake_quantize.h"

#include <cmath>
#include <string>
#include <utility>

#include "core/autograd/function.h"
#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "ops/device_check.h"
#include "quant/torch_ao/fake_quantize_kernels.h"
#include "quant/torch_ao/fused_obs_fake_quant_kernels.h"
#include "quant/torch_ao/qparam_checks.h"

namespace qgrad::ao {

namespace {

Tensor masked_backward(const char* op, const Tensor& g, const Tensor& mask) {
  static const KernelTable<MaskedGradientKernel>& table = kernel_table(kMaskedGradientKernels);
  Tensor dx = empty(g.shape(), TensorOptions().dtype(g.dtype()).device(g.device()));
  table(op, g)(g, mask, dx);
  return dx;
}

const KernelTable<FakeQuantizePerTensorKernel>& per_tensor_table() {
  static const KernelTable<FakeQuantizePerTensorKernel>& table =
      kernel_table(kFakeQuantizePerTensorKernels);
  return table;
}

std::int64_t integer_zero_point(const char* op, const Tensor& zp) {
  require_defined(op, "zero_point", zp);
  QGRAD_CHECK(zp.numel() == 1 && zp.dim() <= 1, ShapeError, op,
              ": zero_point must hold one element, got shape ", zp.shape());
  const double v = zp.item<double>();
  QGRAD_CHECK(std::isfinite(v) && v == std::floor(v), ValueError, op,
              ": zero_point must be an integer, got ", v);
  return static_cast<std::int64_t>(v);
}

// PyTorch's float zero point (per_channel_affine_float_qparams): zero points are not checked
// against the range and enter the element math as floats.
Tensor per_channel_float_zero_point(const Tensor& x, const std::vector<double>& scale,
                                    const Tensor& zero_point, std::int64_t axis,
                                    std::int64_t quant_min, std::int64_t quant_max) {
  static const KernelTable<FakeQuantizePerChannelFloatZpKernel>& table =
      kernel_table(kFakeQuantizePerChannelFloatZpKernels);
  const char* op = "fake_quantize_per_channel_affine";
  FakeQuantizePerChannelFloatZpKernel& kernel = table(op, x);
  const std::int64_t C = x.size(axis);
  QGRAD_CHECK(zero_point.dim() == 1 && zero_point.numel() == C, ShapeError, op,
              ": zero_point must be 1-D with ", C, " elements (one per channel of axis ", axis,
              " of input shape ", x.shape(), "), got shape ", zero_point.shape());
  std::vector<float> s(scale.size());
  for (std::size_t c = 0; c < scale.size(); ++c) {
    s[c] = static_cast<float>(scale[c]);
    QGRAD_CHECK(std::isfinite(s[c]) && s[c] > 0, ValueError, op, ": scale[", c, "] = ", scale[c],
                " must be finite and > 0");
  }
  const std::vector<float> zp = zero_point.to_vector<float>();
  for (std::size_t c = 0; c < zp.size(); ++c)
    QGRAD_CHECK(std::isfinite(zp[c]), ValueError, op, ": zero_point[", c, "] = ", zp[c],
                " must be finite");
  const bool grad = needs_grad({x});
  const Tensor xc = x.detach().contiguous();
  Tensor y = empty(x.shape(), TensorOptions().dtype(x.dtype()).device(x.device()));
  Tensor mask =
      grad ? empty(x.shape(), TensorOptions().dtype(kUInt8).device(x.device())) : Tensor();
  kernel(xc, axis, s, zp, quant_min, quant_max, y, mask);
  if (grad) {
    record("FakeQuantizePerChannelAffineBackward", {x}, {&y},
           [op, mask](const TensorList& g) { return TensorList{masked_backward(op, g[0], mask)}; });
  }
  return y;
}

}  // namespace

Tensor fake_quantize_device_qparams(const Tensor& x, const Tensor& scale, const Tensor& zero_point,
                                    std::int64_t axis, std::int64_t quant_min,
                                    std::int64_t quant_max) {
  const char* op =
      axis < 0 ? "fake_quantize_per_tensor_affine" : "fake_quantize_per_channel_affine";
  require_floating(op, "input", x);
  check_quant_range(op, quant_min, quant_max);
  if (axis >= 0) axis = normalize_channel_axis(op, x, axis);
  const std::int64_t n = axis < 0 ? 1 : x.size(axis);
  static const KernelTable<FakeQuantizeQParamsKernel>& table =
      kernel_table(kFakeQuantizeQParamsKernels);
  static const KernelTable<CheckQParamsKernel>& checks = kernel_table(kCheckQParamsKernels);
  FakeQuantizeQParamsKernel& kernel = table(op, x);
  check_device_qparams(op, x, scale, zero_point, axis, quant_min, quant_max);
  QGRAD_CHECK(is_floating(scale.dtype()), DTypeError, op, ": scale must be floating, got ",
              dtype_name(scale.dtype()));
  const DType zt = zero_point.dtype();
  QGRAD_CHECK(zt == kInt32 || zt == kInt64 || is_floating(zt), DTypeError, op,
              ": zero_point must be int32, int64 or floating, got ", dtype_name(zt));
  // A float zero point per channel is PyTorch's per_channel_affine_float_qparams; per tensor it
  // must hold an integer (checked on the device), converted for the integer element.
  const bool float_zp = is_floating(zt) && axis >= 0;
  // Detached, so no conversion below records autograd (a NoGradGuard here would also stop the
  // backward's recording).
  const Tensor s = scale.detach().to(kFloat32).reshape({n}).contiguous();
  const Tensor z = zero_point.detach().reshape({n}).contiguous();
  checks(op, s)(op, s, z, float_zp, quant_min, quant_max);
  const Tensor zk = float_zp ? z.to(kFloat32) : (is_floating(zt) ? z.to(kInt64) : z);
  const bool grad = needs_grad({x});
  Tensor y = empty(x.shape(), TensorOptions().dtype(x.dtype()).device(x.device()));
  Tensor mask =
      grad ? empty(x.shape(), TensorOptions().dtype(kUInt8).device(x.device())) : Tensor();
  kernel(x.detach(), s, zk, axis, quant_min, quant_max, y, mask);
  if (grad) {
    record(
        axis < 0 ? "FakeQuantizePerTensorAffineBackward" : "FakeQuantizePerChannelAffineBackward",
        {x}, {&y},
        [op, mask](const TensorList& g) { return TensorList{masked_backward(op, g[0], mask)}; });
  }
  return y;
}

Tensor fake_quantize_per_tensor_affine(const Tensor& x, double scale, std::int64_t zero_point,
                                       std::int64_t quant_min, std::int64_t quant_max) {
  const char* op = "fake_quantize_per_tensor_affine";
  require_floating(op, "input", x);
  check_quant_range(op, quant_min, quant_max);
  check_scale_value(op, "scale", scale);
  check_zero_point_value(op, zero_point, quant_min, quant_max);
  const float s = static_cast<float>(scale);
  QGRAD_CHECK(s > 0 && std::isfinite(s), ValueError, op, ": scale ", scale,
              " is not a positive finite float32");
  if (!x.device().is_cpu()) {
    const TensorOptions on = TensorOptions().device(x.device());
    return fake_quantize_device_qparams(
        x, full({1}, s, TensorOptions(on).dtype(kFloat32)),
        full({1}, static_cast<double>(zero_point), TensorOptions(on).dtype(kInt64)), -1, quant_min,
        quant_max);
  }
  const bool grad = needs_grad({x});
  Tensor y = empty(x.shape(), TensorOptions().dtype(x.dtype()).device(x.device()));
  Tensor mask =
      grad ? empty(x.shape(), TensorOptions().dtype(kUInt8).device(x.device())) : Tensor();
  per_tensor_table()(op, x)(x, s, zero_point, quant_min, quant_max, y, mask);
  if (grad) {
    record("FakeQuantizePerTensorAffineBackward", {x}, {&y},
           [op, mask](const TensorList& g) { return TensorList{masked_backward(op, g[0], mask)}; });
  }
  return y;
}

Tensor fake_quantize_per_tensor_affine(const Tensor& x, const Tensor& scale,
                                       const Tensor& zero_point, std::int64_t quant_min,
                                       std::int64_t quant_max) {
  const char* op = "fake_quantize_per_tensor_affine";
  require_floating(op, "input", x);
  if (!x.device().is_cpu())
    return fake_quantize_device_qparams(x, scale, zero_point, -1, quant_min, quant_max);
  const double s = single_float(op, "scale", scale);
  return fake_quantize_per_tensor_affine(x, s, integer_zero_point(op, zero_point), quant_min,
                                         quant_max);
}

Tensor fake_quantize_per_channel_affine(const Tensor& x, const Tensor& scale,
                                        const Tensor& zero_point, std::int64_t axis,
                                        std::int64_t quant_min, std::int64_t quant_max) {
  static const KernelTable<FakeQuantizePerChannelKernel>& table =
      kernel_table(kFakeQuantizePerChannelKernels);
  const char* op = "fake_quantize_per_channel_affine";
  require_floating(op, "input", x);
  check_quant_range(op, quant_min, quant_max);
  const std::int64_t ax = normalize_channel_axis(op, x, axis);
  const std::int64_t C = x.size(ax);
  if (!x.device().is_cpu())
    return fake_quantize_device_qparams(x, scale, zero_point, ax, quant_min, quant_max);
  FakeQuantizePerChannelKernel& kernel = table(op, x);
  const std::vector<double> s = per_channel_floats(op, "scale", scale, C);
  require_defined(op, "zero_point", zero_point);
  if (is_floating(zero_point.dtype()))
    return per_channel_float_zero_point(x, s, zero_point, ax, quant_min, quant_max);
  QGRAD_CHECK(zero_point.dtype() == kInt32 || zero_point.dtype() == kInt64, DTypeError, op,
              ": zero_point must be int32, int64 or floating, got ",
              dtype_name(zero_point.dtype()));
  QGRAD_CHECK(zero_point.dim() == 1 && zero_point.numel() == C, ShapeError, op,
              ": zero_point must be 1-D with ", C, " elements (one per channel of axis ", ax,
              " of input shape ", x.shape(), "), got shape ", zero_point.shape());
  const std::vector<std::int64_t> zp = zero_point.to_vector<std::int64_t>();
  for (std::int64_t c = 0; c < C; ++c) {
    const float sf = static_cast<float>(s[static_cast<std::size_t>(c)]);
    QGRAD_CHECK(std::isfinite(sf) && sf > 0, ValueError, op, ": scale[", c,
                "] = ", s[static_cast<std::size_t>(c)], " must be finite and > 0");
    check_zero_point_value(op, zp[static_cast<std::size_t>(c)], quant_min, quant_max);
  }
  const bool grad = needs_grad({x});
  const Tensor xc = x.detach().contiguous();
  Tensor y = empty(x.shape(), TensorOptions().dtype(x.dtype()).device(x.device()));
  Tensor mask =
      grad ? empty(x.shape(), TensorOptions().dtype(kUInt8).device(x.device())) : Tensor();
  kernel(xc, ax, s, zp, quant_min, quant_max, y, mask);
  if (grad) {
    record("FakeQuantizePerChannelAffineBackward", {x}, {&y},
           [op, mask](const TensorList& g) { return TensorList{masked_backward(op, g[0], mask)}; });
  }
  return y;
}

}  // namespace qgrad::ao
