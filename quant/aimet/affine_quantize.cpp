// AIMET affine quantization: argument checks (encoding shape broadcastable from the trailing
// dims, positive finite scales, grid representable in the input dtype), dispatch through the
// "aimet.*" kernel tables, and the backward rules. Encodings with an EncodingLayout (per tensor,
// per channel, any block of channel dims) run the fast kernels on contiguous data: only the
// gradients that are needed are computed, the scale / offset gradients summed per channel by the
// kernel; when only x needs a gradient the forward keeps a uint8 mask instead. Other encodings use
// the strided kernels.
#include "quant/aimet/affine_quantize.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/autograd/function.h"
#include "core/factory.h"
#include "ops/device_check.h"
#include "ops/reduce/reduce.h"
#include "quant/aimet/affine_quantize_kernels.h"
#include "quant/aimet/encoding_layout.h"
#include "quant/parameter_check_kernels.h"
#include "quant/torch_ao/qparam_checks.h"

namespace qgrad::aimet {

using ao::check_broadcast_param;
using ao::check_quant_range;

namespace {

const char* backward_name(AffineKind k) {
  switch (k) {
    case AffineKind::Quantize:
      return "AimetQuantizeBackward";
    case AffineKind::Dequantize:
      return "AimetDequantizeBackward";
    default:
      return "AimetQuantizeDequantizeBackward";
  }
}

const char* kind_name(AffineKind k) {
  switch (k) {
    case AffineKind::Quantize:
      return "aimet.quantize";
    case AffineKind::Dequantize:
      return "aimet.dequantize";
    default:
      return "aimet.quantize_dequantize";
  }
}

bool representable_in_float(std::int64_t v) {
  return v >= -(std::int64_t{1} << 24) && v <= (std::int64_t{1} << 24);
}

// AIMET's numerical-stability rule: a float32 grid is used when its four edge values are exact
// in float32 and float32's eps <= 0.1 / (qmax - qmin); otherwise the math runs in double.
bool needs_wide(DType dt, std::int64_t qmin, std::int64_t qmax) {
  if (dt != kFloat32) return false;
  const bool exact = representable_in_float(qmin) && representable_in_float(qmax) &&
                     representable_in_float(qmin + 1) && representable_in_float(qmax - 1);
  if (!exact) return true;
  if (qmin == qmax) return false;
  return 1.1920928955078125e-07 > 0.1 / static_cast<double>(qmax - qmin);
}

void check_grid_float32(const char* op, DType dt, std::int64_t qmin, std::int64_t qmax) {
  if (dt != kFloat32) return;
  const bool exact = representable_in_float(qmin) && representable_in_float(qmax) &&
                     representable_in_float(qmin + 1) && representable_in_float(qmax - 1);
  QGRAD_CHECK(exact, ValueError, op, ": float32 cannot represent the quantized range [", qmin, ", ",
              qmax, "]; use a float64 input");
}

void check_scales(const char* op, const Tensor& scale) {
  for (double v : scale.to_vector<double>())
    QGRAD_CHECK(std::isfinite(v) && v > 0, ValueError, op,
                ": scale values must be finite and > 0 (is max > min?), got ", v);
}

// The shape scale and offset broadcast to together (both broadcast to x from the trailing dims).
Shape encoding_shape(const Tensor& scale, const Tensor& offset) {
  const Shape& a = scale.shape();
  const Shape& b = offset.shape();
  Shape out(std::max(a.size(), b.size()), 1);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const std::int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    out[out.size() - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

// scale / offset as a contiguous tensor of the encoding shape (one element per channel).
Tensor channel_values(const Tensor& t, const Shape& enc) {
  return t.detach().expand(enc).contiguous();
}

// Encodings whose channels are not one block of x's dims: the strided kernels, with x-shaped
// gradients reduced by sum_to_shape.
Tensor apply_strided(AffineKind kind, const Tensor& x, const Tensor& scale, const Tensor& offset,
                     std::int64_t qmin, std::int64_t qmax, bool wide) {
  static const KernelTable<AffineForwardStridedKernel>& table =
      kernel_table(kAffineForwardStridedKernels);
  Tensor y = empty(x.shape(), TensorOptions().dtype(x.dtype()).device(x.device()));
  const Tensor se = scale.detach().expand(x.shape()), oe = offset.detach().expand(x.shape());
  table(kind_name(kind), x)(kind, x, se, oe, qmin, qmax, wide, y);
  if (!needs_grad({x, scale, offset})) return y;
  record(backward_name(kind), {x, scale, offset}, {&y},
         [kind, sx = SavedTensor(x), ss = SavedTensor(scale), so = SavedTensor(offset), qmin, qmax,
          wide](const TensorList& g) {
           static const KernelTable<AffineBackwardStridedKernel>& backward =
               kernel_table(kAffineBackwardStridedKernels);
           const Tensor xs = sx.get(), s = ss.get(), o = so.get();
           const TensorOptions opt = TensorOptions().dtype(xs.dtype()).device(xs.device());
           Tensor dx = empty(xs.shape(), opt), ds = empty(xs.shape(), opt),
                  dof = empty(xs.shape(), opt);
           backward(kind_name(kind), xs)(kind, g[0], xs, s.expand(xs.shape()), o.expand(xs.shape()),
                                         qmin, qmax, wide, dx, ds, dof);
           return TensorList{dx, sum_to_shape(ds, s.shape()), sum_to_shape(dof, o.shape())};
         });
  return y;
}

// Off the CPU: scale and offset checked by a kernel (a GPU reports at the host's next wait, so a
// training step does not wait for them), then the strided kernels, the only ones there.
Tensor apply_on_device(AffineKind kind, const char* op, const Tensor& x, const Tensor& scale,
                       const Tensor& offset, std::int64_t qmin, std::int64_t qmax) {
  static const KernelTable<quant::CheckParameterKernel>& checks =
      kernel_table(quant::kCheckParameterKernels);
  check_broadcast_param(op, "scale", scale, x);
  check_broadcast_param(op, "offset", offset, x);
  if (kind != AffineKind::Dequantize) check_quant_range(op, qmin, qmax);
  if (kind == AffineKind::Quantize) check_grid_float32(op, x.dtype(), qmin, qmax);
  checks(op, offset)(op, CheckedParameter::Offset, ParameterRule::Finite, offset.detach());
  checks(op, scale)(op, CheckedParameter::Scale, ParameterRule::FiniteAndPositive, scale.detach());
  const bool wide = kind == AffineKind::QuantizeDequantize && needs_wide(x.dtype(), qmin, qmax);
  return apply_strided(kind, x, scale, offset, qmin, qmax, wide);
}

Tensor apply(AffineKind kind, const Tensor& x, const Tensor& scale, const Tensor& offset,
             std::int64_t qmin, std::int64_t qmax) {
  static const KernelTable<AffineForwardKernel>& table = kernel_table(kAffineForwardKernels);
  const char* op = kind_name(kind);
  require_floating(op, "input", x);
  if (!x.device().is_cpu()) return apply_on_device(kind, op, x, scale, offset, qmin, qmax);
  // The device check comes before scale and offset are read on the host.
  AffineForwardKernel& forward = table(op, x);
  check_broadcast_param(op, "scale", scale, x);
  check_broadcast_param(op, "offset", offset, x);
  if (kind != AffineKind::Dequantize) check_quant_range(op, qmin, qmax);
  if (kind == AffineKind::Quantize) check_grid_float32(op, x.dtype(), qmin, qmax);
  for (double v : offset.to_vector<double>())
    QGRAD_CHECK(std::isfinite(v), ValueError, op, ": offset values must be finite, got ", v);
  check_scales(op, scale);
  const bool wide = kind == AffineKind::QuantizeDequantize && needs_wide(x.dtype(), qmin, qmax);

  const Shape enc = encoding_shape(scale, offset);
  const std::optional<EncodingLayout> layout = encoding_layout(x.shape(), enc);
  if (!layout) return apply_strided(kind, x, scale, offset, qmin, qmax, wide);
  const EncodingLayout l = *layout;
  const Tensor xc = x.contiguous();
  const Tensor sc = channel_values(scale, enc), oc = channel_values(offset, enc);
  Tensor y = empty(x.shape(), TensorOptions().dtype(x.dtype()).device(x.device()));
  const bool grad = needs_grad({x, scale, offset});
  const bool need_x = grad && x.requires_grad();
  const bool need_s = grad && scale.requires_grad();
  const bool need_o = grad && offset.requires_grad();
  // When only x needs a gradient, the forward keeps the in-range mask (1 byte per element) and
  // the backward reads it instead of x.
  const bool keep_mask = need_x && !need_s && !need_o && kind != AffineKind::Dequantize;
  Tensor mask =
      keep_mask ? empty(x.shape(), TensorOptions().dtype(kUInt8).device(x.device())) : Tensor();
  forward(kind, l, xc, sc, oc, qmin, qmax, wide, y, mask);
  if (!grad) return y;
  if (!need_s && !need_o) {
    record(backward_name(kind), {x, scale, offset}, {&y},
           [kind, l, enc, mask, ss = SavedTensor(scale), wide](const TensorList& g) {
             static const KernelTable<AffineBackwardDxKernel>& backward =
                 kernel_table(kAffineBackwardDxKernels);
             const Tensor gc = g[0].contiguous();
             Tensor dx = empty(gc.shape(), TensorOptions().dtype(gc.dtype()).device(gc.device()));
             backward(kind_name(kind), gc)(kind, l, gc, mask, channel_values(ss.get(), enc), wide,
                                           dx);
             return TensorList{dx, Tensor(), Tensor()};
           });
    return y;
  }
  record(backward_name(kind), {x, scale, offset}, {&y},
         [kind, l, enc, sx = SavedTensor(x), ss = SavedTensor(scale), so = SavedTensor(offset),
          qmin, qmax, wide, need_x, need_s, need_o](const TensorList& g) {
           static const KernelTable<AffineBackwardKernel>& backward =
               kernel_table(kAffineBackwardKernels);
           const Tensor xs = sx.get().contiguous(), s = ss.get(), o = so.get();
           const Tensor gc = g[0].contiguous();
           const TensorOptions opt = TensorOptions().dtype(xs.dtype()).device(xs.device());
           Tensor dx = need_x ? empty(xs.shape(), opt) : Tensor();
           Tensor ds = need_s ? empty(enc, opt) : Tensor();
           Tensor dof = need_o ? empty(enc, opt) : Tensor();
           backward(kind_name(kind), xs)(kind, l, gc, xs, channel_values(s, enc),
                                         channel_values(o, enc), qmin, qmax, wide, dx, ds, dof);
           return TensorList{dx, need_s ? sum_to_shape(ds, s.shape()) : Tensor(),
                             need_o ? sum_to_shape(dof, o.shape()) : Tensor()};
         });
  return y;
}

}  // namespace

Tensor quantize(const Tensor& x, const Tensor& scale, const Tensor& offset, std::int64_t qmin,
                std::int64_t qmax) {
  return apply(AffineKind::Quantize, x, scale, offset, qmin, qmax);
}

Tensor dequantize(const Tensor& q, const Tensor& scale, const Tensor& offset) {
  return apply(AffineKind::Dequantize, q, scale, offset, 0, 0);
}

Tensor quantize_dequantize(const Tensor& x, const Tensor& scale, const Tensor& offset,
                           std::int64_t qmin, std::int64_t qmax) {
  return apply(AffineKind::QuantizeDequantize, x, scale, offset, qmin, qmax);
}

Tensor ste_round(const Tensor& x) {
  static const KernelTable<RoundHalfEvenKernel>& table = kernel_table(kRoundHalfEvenKernels);
  const char* op = "aimet.ste_round";
  require_floating(op, "input", x);
  RoundHalfEvenKernel& kernel = table(op, x);
  Tensor y = empty(x.shape(), TensorOptions().dtype(x.dtype()).device(x.device()));
  kernel(x, y);
  record("AimetSteRoundBackward", {x}, {&y}, [](const TensorList& g) { return TensorList{g[0]}; });
  return y;
}

}  // namespace qgrad::aimet
