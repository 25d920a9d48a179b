// AIMET affine quantization: argument checks (encoding shape broadcastable from the trailing
// dims, positive finite scales, grid representable in the input dtype), dispatch, and the
// backward rules reduced to the scale / offset shapes.
#include "quant/aimet/affine_quantize.h"

#include <cmath>

#include "core/autograd/function.h"
#include "core/factory.h"
#include "ops/device_check.h"
#include "ops/reduce/reduce.h"
#include "quant/aimet/affine_quantize_cpu.h"
#include "quant/torch_ao/qparam_checks.h"

namespace qgrad::aimet {

using ao::check_broadcast_param;
using ao::check_quant_range;

namespace {

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

Tensor apply(AffineKind kind, const Tensor& x, const Tensor& scale, const Tensor& offset,
             std::int64_t qmin, std::int64_t qmax) {
  const char* op = kind_name(kind);
  require_floating(op, "input", x);
  require_cpu(op, x);
  check_broadcast_param(op, "scale", scale, x);
  check_broadcast_param(op, "offset", offset, x);
  if (kind != AffineKind::Dequantize) check_quant_range(op, qmin, qmax);
  if (kind == AffineKind::Quantize) check_grid_float32(op, x.dtype(), qmin, qmax);
  for (double v : offset.to_vector<double>())
    QGRAD_CHECK(std::isfinite(v), ValueError, op, ": offset values must be finite, got ", v);
  check_scales(op, scale);
  const bool wide = kind == AffineKind::QuantizeDequantize && needs_wide(x.dtype(), qmin, qmax);

  Tensor y = empty(x.shape(), TensorOptions().dtype(x.dtype()));
  const Tensor se = scale.detach().expand(x.shape()), oe = offset.detach().expand(x.shape());
  affine_forward_cpu(kind, x, se, oe, qmin, qmax, wide, y);
  if (!needs_grad({x, scale, offset})) return y;
  const std::string name = kind == AffineKind::Quantize     ? "AimetQuantizeBackward"
                           : kind == AffineKind::Dequantize ? "AimetDequantizeBackward"
                                                            : "AimetQuantizeDequantizeBackward";
  record(name, {x, scale, offset}, {&y},
         [kind, sx = SavedTensor(x), ss = SavedTensor(scale), so = SavedTensor(offset), qmin, qmax,
          wide](const TensorList& g) {
           const Tensor xs = sx.get(), s = ss.get(), o = so.get();
           const TensorOptions opt = TensorOptions().dtype(xs.dtype());
           Tensor dx = empty(xs.shape(), opt), ds = empty(xs.shape(), opt),
                  dof = empty(xs.shape(), opt);
           affine_backward_cpu(kind, g[0], xs, s.expand(xs.shape()), o.expand(xs.shape()), qmin,
                               qmax, wide, dx, ds, dof);
           return TensorList{dx, sum_to_shape(ds, s.shape()), sum_to_shape(dof, o.shape())};
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
  require_floating("aimet.ste_round", "input", x);
  require_cpu("aimet.ste_round", x);
  Tensor y = empty(x.shape(), TensorOptions().dtype(x.dtype()));
  round_half_even_cpu(x, y);
  record("AimetSteRoundBackward", {x}, {&y}, [](const TensorList& g) { return TensorList{g[0]}; });
  return y;
}

}  // namespace qgrad::aimet
