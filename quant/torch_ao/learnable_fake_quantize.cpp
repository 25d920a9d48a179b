// torch.ao learnable fake quantization: argument checks, PyTorch's zero-point rounding for the
// forward and the backward, dispatch through the "torch_ao.*" kernel tables, and the fused
// backward that produces dx and reduces dscale and dzero_point in one pass; off the CPU, the
// device path whose parameters are read nowhere on the host (fake_quantize_learnable_device).
#include "quant/torch_ao/learnable_fake_quantize.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/autograd/function.h"
#include "core/factory.h"
#include "ops/device_check.h"
#include "ops/reduce/reduce.h"
#include "quant/torch_ao/fake_quantize_kernels.h"
#include "quant/torch_ao/qparam_checks.h"

namespace qgrad::ao {

namespace {

// PyTorch reads the parameters at float precision for float32 inputs.
double at_precision(DType dt, double v) {
  return dt == kFloat32 ? static_cast<double>(static_cast<float>(v)) : v;
}

// Forward zero point: clamp(rne(zp)) (PyTorch: nearbyint, then clamp, then int64).
std::int64_t forward_zero_point(DType dt, double zp, std::int64_t qmin, std::int64_t qmax) {
  const double r = dt == kFloat32 ? std::nearbyint(static_cast<float>(zp)) : std::nearbyint(zp);
  return static_cast<std::int64_t>(
      std::min(std::max(r, static_cast<double>(qmin)), static_cast<double>(qmax)));
}

// Per-tensor backward zero point: trunc(clamp(zp + 0.5)), computed in the input's precision.
std::int64_t backward_zero_point(DType dt, double zp, std::int64_t qmin, std::int64_t qmax) {
  const double h = dt == kFloat32 ? static_cast<double>(static_cast<float>(zp) + 0.5f) : zp + 0.5;
  return static_cast<std::int64_t>(
      std::min(std::max(h, static_cast<double>(qmin)), static_cast<double>(qmax)));
}

void check_param_dtype(const char* op, const char* arg, const Tensor& p, const Tensor& x) {
  require_floating(op, arg, p);
  QGRAD_CHECK(p.dtype() == x.dtype(), DTypeError, op, ": ", arg, " must have the input's dtype ",
              dtype_name(x.dtype()), ", got ", dtype_name(p.dtype()));
  // The kernel table lookup on x has checked x's device; p is read there too.
  check_same_device(op, x, p);
}

Tensor filled_like(const Tensor& like, const std::vector<double>& values) {
  Tensor t = empty(like.shape(), TensorOptions().dtype(like.dtype()));
  QGRAD_DISPATCH_FLOAT(like.dtype(), "learnable fake quantize", [&] {
    scalar_t* p = t.data_ptr<scalar_t>();
    for (std::size_t i = 0; i < values.size(); ++i) p[i] = static_cast<scalar_t>(values[i]);
  });
  return t;
}

}  // namespace

double learnable_grad_factor(std::int64_t numel, std::int64_t quant_max) {
  QGRAD_CHECK(numel > 0 && quant_max > 0, ValueError,
              "learnable_grad_factor: numel and quant_max must be > 0, got ", numel, " and ",
              quant_max);
  return 1.0 / std::sqrt(static_cast<double>(numel) * static_cast<double>(quant_max));
}

Tensor fake_quantize_learnable_device(const Tensor& x, const Tensor& scale,
                                      const Tensor& zero_point, std::int64_t axis,
                                      std::int64_t quant_min, std::int64_t quant_max,
                                      double grad_factor) {
  const char* op = axis < 0 ? "_fake_quantize_learnable_per_tensor_affine"
                            : "_fake_quantize_learnable_per_channel_affine";
  static const KernelTable<LearnableQParamsKernel>& qparams_table =
      kernel_table(kLearnableQParamsKernels);
  static const KernelTable<FakeQuantizeQParamsKernel>& forward_table =
      kernel_table(kFakeQuantizeQParamsKernels);
  static const KernelTable<CheckQParamsKernel>& checks = kernel_table(kCheckQParamsKernels);
  require_floating(op, "input", x);
  FakeQuantizeQParamsKernel& forward = forward_table(op, x);
  // The forward's scale is float32 on this path; a float64 input would need PyTorch's double
  // per-channel scale, which the CPU front gives.
  QGRAD_CHECK(x.dtype() == kFloat32, DTypeError, op, ": on ", x.device(),
              " the input must be float32 (float64 runs on the CPU), got ", dtype_name(x.dtype()));
  check_quant_range(op, quant_min, quant_max);
  if (axis >= 0) axis = normalize_channel_axis(op, x, axis);
  const std::int64_t n = axis < 0 ? 1 : x.size(axis);
  check_device_qparams(op, x, scale, zero_point, axis, quant_min, quant_max);
  check_param_dtype(op, "scale", scale, x);
  check_param_dtype(op, "zero_point", zero_point, x);
  QGRAD_CHECK(std::isfinite(grad_factor), ValueError, op, ": grad_factor must be finite, got ",
              grad_factor);
  // The backward uses s and zb, computed here from the forward's values (the optimiser may
  // update the parameters in place before it runs).
  const Tensor sd = scale.detach().reshape({n}).contiguous();
  const Tensor zd = zero_point.detach().reshape({n}).contiguous();
  // scale finite and > 0, zero point finite: on a GPU recorded for the host's next wait.
  checks(op, sd)(op, sd, zd, true, quant_min, quant_max);
  const TensorOptions on = TensorOptions().device(x.device());
  Tensor s = empty({n}, TensorOptions(on).dtype(kFloat32));
  Tensor zf = empty({n}, TensorOptions(on).dtype(kInt64));
  Tensor zb = empty({n}, TensorOptions(on).dtype(kFloat64));
  qparams_table(op, sd)(sd, zd, quant_min, quant_max, axis < 0, s, zf, zb);
  Tensor y = empty(x.shape(), TensorOptions(on).dtype(x.dtype()));
  forward(x.detach(), s, zf, axis, quant_min, quant_max, y, Tensor());
  if (!needs_grad({x, scale, zero_point})) return y;
  record(axis < 0 ? "FakeQuantizeLearnablePerTensorAffineBackward"
                  : "FakeQuantizeLearnablePerChannelAffineBackward",
         {x, scale, zero_point}, {&y},
         [op, sx = SavedTensor(x), s, zb, axis, quant_min, quant_max, grad_factor,
          sshape = scale.shape(), zshape = zero_point.shape()](const TensorList& g) {
           static const KernelTable<LearnableBackwardOperandsKernel>& backward =
               kernel_table(kLearnableBackwardOperandsKernels);
           const Tensor xs = sx.get();
           const TensorOptions o = TensorOptions().dtype(xs.dtype()).device(xs.device());
           Tensor dx = empty(xs.shape(), o), ds = empty(xs.shape(), o), dz = empty(xs.shape(), o);
           backward(op, xs)(xs, g[0], s, zb, axis, quant_min, quant_max, grad_factor, dx, ds, dz);
           // Summed in double (another order than the CPU kernel's, so equal to rounding).
           Shape dims;
           for (std::int64_t d = 0; d < xs.dim(); ++d)
             if (d != axis) dims.push_back(d);
           if (dims.empty()) return TensorList{dx, ds.reshape(sshape), dz.reshape(zshape)};
           return TensorList{dx, sum(ds, dims).reshape(sshape), sum(dz, dims).reshape(zshape)};
         });
  return y;
}

Tensor fake_quantize_learnable_per_tensor_affine(const Tensor& x, const Tensor& scale,
                                                 const Tensor& zero_point, std::int64_t quant_min,
                                                 std::int64_t quant_max, double grad_factor) {
  static const KernelTable<FakeQuantizePerTensorKernel>& table =
      kernel_table(kFakeQuantizePerTensorKernels);
  const char* op = "_fake_quantize_learnable_per_tensor_affine";
  require_floating(op, "input", x);
  if (!x.device().is_cpu())
    return fake_quantize_learnable_device(x, scale, zero_point, -1, quant_min, quant_max,
                                          grad_factor);
  // The device check comes before scale and zero_point are read on the host.
  FakeQuantizePerTensorKernel& forward = table(op, x);
  check_quant_range(op, quant_min, quant_max);
  check_param_dtype(op, "scale", scale, x);
  check_param_dtype(op, "zero_point", zero_point, x);
  const DType dt = x.dtype();
  const double s = at_precision(dt, single_float(op, "scale", scale));
  const double zp = at_precision(dt, single_float(op, "zero_point", zero_point));
  check_scale_value(op, "scale", s);
  QGRAD_CHECK(std::isfinite(zp), ValueError, op, ": zero_point must be finite, got ", zp);
  QGRAD_CHECK(std::isfinite(grad_factor), ValueError, op, ": grad_factor must be finite, got ",
              grad_factor);

  Tensor y = empty(x.shape(), TensorOptions().dtype(dt).device(x.device()));
  forward(x, static_cast<float>(s), forward_zero_point(dt, zp, quant_min, quant_max), quant_min,
          quant_max, y, Tensor());
  if (!needs_grad({x, scale, zero_point})) return y;
  const double zp_b = static_cast<double>(backward_zero_point(dt, zp, quant_min, quant_max));
  record("FakeQuantizeLearnablePerTensorAffineBackward", {x, scale, zero_point}, {&y},
         [op, sx = SavedTensor(x), s, zp_b, quant_min, quant_max, grad_factor,
          sshape = scale.shape(), zshape = zero_point.shape()](const TensorList& g) {
           static const KernelTable<LearnablePerTensorBackwardKernel>& backward =
               kernel_table(kLearnablePerTensorBackwardKernels);
           const Tensor xs = sx.get().contiguous();
           const Tensor dy = g[0].contiguous();
           const TensorOptions o = TensorOptions().dtype(xs.dtype()).device(xs.device());
           Tensor dx = empty(xs.shape(), o);
           double ds = 0, dz = 0;
           backward(op, xs)(xs, dy, s, zp_b, quant_min, quant_max, grad_factor, dx, ds, dz);
           return TensorList{dx, full(sshape, ds, o), full(zshape, dz, o)};
         });
  return y;
}

Tensor fake_quantize_learnable_per_channel_affine(const Tensor& x, const Tensor& scale,
                                                  const Tensor& zero_point, std::int64_t axis,
                                                  std::int64_t quant_min, std::int64_t quant_max,
                                                  double grad_factor) {
  static const KernelTable<FakeQuantizePerChannelKernel>& table =
      kernel_table(kFakeQuantizePerChannelKernels);
  const char* op = "_fake_quantize_learnable_per_channel_affine";
  require_floating(op, "input", x);
  if (!x.device().is_cpu())
    return fake_quantize_learnable_device(x, scale, zero_point, normalize_channel_axis(op, x, axis),
                                          quant_min, quant_max, grad_factor);
  // The device check comes before scale and zero_point are read on the host.
  FakeQuantizePerChannelKernel& forward = table(op, x);
  check_quant_range(op, quant_min, quant_max);
  const std::int64_t ax = normalize_channel_axis(op, x, axis);
  const std::int64_t C = x.size(ax);
  check_param_dtype(op, "scale", scale, x);
  check_param_dtype(op, "zero_point", zero_point, x);
  std::vector<double> s = per_channel_floats(op, "scale", scale, C);
  std::vector<double> zp = per_channel_floats(op, "zero_point", zero_point, C);
  QGRAD_CHECK(std::isfinite(grad_factor), ValueError, op, ": grad_factor must be finite, got ",
              grad_factor);
  const DType dt = x.dtype();
  std::vector<std::int64_t> zp_fwd(static_cast<std::size_t>(C));
  std::vector<double> zp_bwd(static_cast<std::size_t>(C));
  for (std::size_t c = 0; c < s.size(); ++c) {
    s[c] = at_precision(dt, s[c]);
    check_scale_value(op, "scale", s[c]);
    QGRAD_CHECK(std::isfinite(zp[c]), ValueError, op, ": zero_point[", c, "] must be finite, got ",
                zp[c]);
    // PyTorch: zero_point.round().clamp_(qmin, qmax), for the forward and the backward alike.
    zp_fwd[c] = forward_zero_point(dt, at_precision(dt, zp[c]), quant_min, quant_max);
    zp_bwd[c] = static_cast<double>(zp_fwd[c]);
  }
  const Tensor xc = x.detach().contiguous();
  Tensor y = empty(x.shape(), TensorOptions().dtype(dt).device(x.device()));
  forward(xc, ax, s, zp_fwd, quant_min, quant_max, y, Tensor());
  if (!needs_grad({x, scale, zero_point})) return y;
  record("FakeQuantizeLearnablePerChannelAffineBackward", {x, scale, zero_point}, {&y},
         [op, sx = SavedTensor(x), ax, s, zp_bwd, quant_min, quant_max, grad_factor,
          sref = scale.detach(), zref = zero_point.detach()](const TensorList& g) {
           static const KernelTable<LearnablePerChannelBackwardKernel>& backward =
               kernel_table(kLearnablePerChannelBackwardKernels);
           const Tensor xs = sx.get().contiguous();
           const Tensor dy = g[0].contiguous();
           Tensor dx = empty(xs.shape(), TensorOptions().dtype(xs.dtype()).device(xs.device()));
           std::vector<double> ds, dz;
           backward(op, xs)(xs, dy, ax, s, zp_bwd, quant_min, quant_max, grad_factor, dx, ds, dz);
           return TensorList{dx, filled_like(sref, ds), filled_like(zref, dz)};
         });
  return y;
}

}  // namespace qgrad::ao
