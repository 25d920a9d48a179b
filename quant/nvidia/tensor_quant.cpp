// The differentiable NVIDIA quantization functions: argument checks, amax broadcasting (per
// tensor or per channel), dispatch through the "nvidia.*" kernel tables and the clipped
// straight-through backward.
#include "quant/nvidia/tensor_quant.h"

#include <cmath>
#include <limits>

#include "core/autograd/function.h"
#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "ops/binary/binary.h"
#include "ops/device_check.h"
#include "ops/unary/unary.h"
#include "ops/where/where.h"
#include "quant/nvidia/quant_apply.h"
#include "quant/nvidia/tensor_quant_kernels.h"

namespace qgrad::nvidia {

namespace {

// amax is per tensor (one element) or broadcasts to x's shape without growing it; each amax dim
// is 1 (shared along that axis) or equal to x's dim (own value per index).
BlockLayout amax_layout(const char* op, const Tensor& x, const Tensor& amax) {
  const Shape& xs = x.shape();
  Shape block(xs.size(), 0);
  if (amax.numel() == 1) return make_block_layout(xs, block);
  const Shape& as = amax.shape();
  QGRAD_CHECK(as.size() <= xs.size(), ShapeError, op, ": amax of shape ", as,
              " does not broadcast to the input of shape ", xs);
  const std::size_t lead = xs.size() - as.size();
  for (std::size_t k = 0; k < xs.size(); ++k) {
    const std::int64_t a = k < lead ? 1 : as[k - lead];
    QGRAD_CHECK(a == 1 || a == xs[k], ShapeError, op, ": amax of shape ", as,
                " does not broadcast to the input of shape ", xs, " (axis ", k, ")");
    block[k] = a == 1 ? 0 : 1;
  }
  return make_block_layout(xs, block);
}

// A floating input with a kernel of `table` for its device: checked before any amax is read on
// the host.
template <typename Fn>
void check_input(const char* op, const Tensor& x, const KernelTable<Fn>& table) {
  require_floating(op, "input", x);
  table(op, x);
}

// A floating amax on the input's device (whose kernels check_input has found).
void check_amax(const char* op, const Tensor& x, const Tensor& amax) {
  require_floating(op, "amax", amax);
  check_same_device(op, x, amax);
}

// Shared front half of the integer functions.
struct IntCall {
  IntRange range;
  BlockLayout layout;
  Tensor xc;
  Tensor amax;  // x's dtype, contiguous copy
};

IntCall prepare_int(const char* op, const Tensor& x, const Tensor& amax, int num_bits,
                    bool is_unsigned, bool narrow_range) {
  static const KernelTable<IntQuantKernel>& int_quant = kernel_table(kIntQuantKernels);
  check_input(op, x, int_quant);
  check_amax(op, x, amax);
  IntCall c;
  c.range = int_quant_range(num_bits, is_unsigned, narrow_range, op);
  c.layout = amax_layout(op, x, amax);
  c.amax = checked_amax_copy(op, amax, x.dtype());
  c.xc = x.contiguous();
  if (is_unsigned) check_unsigned_input(op, c.xc);
  return c;
}

Tensor fake_int(const char* op, const char* node, const Tensor& x, const Tensor& amax, int num_bits,
                bool is_unsigned, bool narrow_range) {
  IntCall c = prepare_int(op, x, amax, num_bits, is_unsigned, narrow_range);
  Tensor out = apply_int_quant(op, c.xc, c.layout, c.amax, c.range, /*fake=*/true);
  record_clip_ste(node, {x, amax}, out, c.xc, c.layout, c.amax);
  return out;
}

}  // namespace

IntRange int_quant_range(int num_bits, bool is_unsigned, bool narrow_range, const char* op) {
  const int mag_bits = num_bits - 1 + (is_unsigned ? 1 : 0);
  QGRAD_CHECK(mag_bits >= 1 && num_bits <= 24, ValueError, op, ": num_bits ", num_bits,
              " is out of range (", is_unsigned ? "unsigned: 1..24" : "signed: 2..24", ")");
  IntRange r;
  r.max_bound = std::ldexp(1.0, mag_bits) - 1.0;
  r.min_bound = is_unsigned ? 0.0 : (narrow_range ? -r.max_bound : -r.max_bound - 1.0);
  return r;
}

std::pair<Tensor, Tensor> tensor_quant(const Tensor& x, const Tensor& amax, int num_bits,
                                       bool is_unsigned, bool narrow_range) {
  const char* op = "tensor_quant";
  IntCall c = prepare_int(op, x, amax, num_bits, is_unsigned, narrow_range);
  Tensor scale;
  Tensor q = apply_int_quant(op, c.xc, c.layout, c.amax, c.range, /*fake=*/false, &scale);
  record_clip_ste("TensorQuantBackward", {x, amax}, q, c.xc, c.layout, c.amax);
  return {q, scale.reshape(amax.shape())};
}

Tensor fake_tensor_quant(const Tensor& x, const Tensor& amax, int num_bits, bool is_unsigned,
                         bool narrow_range) {
  return fake_int("fake_tensor_quant", "FakeTensorQuantBackward", x, amax, num_bits, is_unsigned,
                  narrow_range);
}

Tensor legacy_fake_tensor_quant(const Tensor& x, const Tensor& amax, int num_bits, bool is_unsigned,
                                bool narrow_range) {
  return fake_int("legacy_fake_tensor_quant", "LegacyFakeTensorQuantBackward", x, amax, num_bits,
                  is_unsigned, narrow_range);
}

Tensor fake_affine_tensor_quant(const Tensor& x, double min_range, double max_range, int num_bits) {
  static const KernelTable<AffineFakeQuantKernel>& table = kernel_table(kAffineFakeQuantKernels);
  const char* op = "fake_affine_tensor_quant";
  check_input(op, x, table);
  QGRAD_CHECK(num_bits >= 1 && num_bits <= 24, ValueError, op, ": num_bits ", num_bits,
              " is out of range 1..24");
  QGRAD_CHECK(std::isfinite(min_range) && std::isfinite(max_range) && min_range < max_range,
              ValueError, op, ": need finite min_range < max_range, got (", min_range, ", ",
              max_range, ")");
  const double min_bound = -std::ldexp(1.0, num_bits - 1);
  const double max_bound = std::ldexp(1.0, num_bits - 1) - 1.0;
  // The reference computes step and zero point in the input's precision.
  double step = 0, qz = 0, lo = 0, hi = 0;
  QGRAD_DISPATCH_FLOAT(x.dtype(), op, [&] {
    using T = scalar_t;
    const T mn = static_cast<T>(min_range), mx = static_cast<T>(max_range);
    const T st = (mx - mn) / static_cast<T>(std::ldexp(1.0, num_bits) - 1.0);
    QGRAD_CHECK(st > T(0) && std::isfinite(st), ValueError, op, ": range (", min_range, ", ",
                max_range, ") gives an unusable step ", st);
    const T z = std::nearbyint(mn / st) - static_cast<T>(min_bound);
    step = st;
    qz = z;
    lo = static_cast<T>(mn);
    hi = static_cast<T>(mx);
  });
  Tensor xc = x.contiguous();
  Tensor out = empty(x.shape(), TensorOptions().dtype(x.dtype()).device(x.device()));
  if (x.numel() > 0) table(op, xc)(xc, out, step, qz, min_bound, max_bound);
  if (needs_grad({x})) {
    SavedTensor sx(xc);
    record("FakeAffineTensorQuantBackward", {x}, {&out}, [op, sx, lo, hi](const TensorList& g) {
      static const KernelTable<RangeSteBackwardKernel>& backward =
          kernel_table(kRangeSteBackwardKernels);
      Tensor xs = sx.get();
      Tensor gx = empty(xs.shape(), TensorOptions().dtype(xs.dtype()).device(xs.device()));
      if (xs.numel() > 0) backward(op, xs)(g[0].contiguous(), xs, gx, lo, hi);
      return TensorList{gx};
    });
  }
  return out;
}

Tensor scaled_minifloat_quant(const Tensor& x, const Tensor& amax, FloatFormat format) {
  static const KernelTable<FpScaledQuantKernel>& table = kernel_table(kFpScaledQuantKernels);
  const char* op = "scaled_e4m3";
  check_input(op, x, table);
  const MiniFloatSpec fmt = minifloat_spec(format, op);
  BlockLayout L;
  Tensor eff, s;
  const TensorOptions o = TensorOptions().dtype(x.dtype()).device(x.device());
  if (amax.defined()) {
    check_amax(op, x, amax);
    L = amax_layout(op, x, amax);
    eff = checked_amax_copy(op, amax, x.dtype());
    // pytorch_quantization writes `448. / amax`, which PyTorch evaluates as a reciprocal then a
    // multiply: s = fl(fl(1 / amax) * maxval). No special case for a tiny or zero amax (s is
    // huge or Inf; the small-value mask still zeroes |x| < 2^-24).
    s = mul(div(1.0, eff), fmt.max_value).contiguous();
  } else {
    L = make_block_layout(x.shape(), Shape(x.shape().size(), 0));
    eff = full(L.grid_shape, fmt.max_value, o);
    s = full(L.grid_shape, 1.0, o);
  }
  Tensor xc = x.contiguous();
  // The |x| < 2^-24 -> +0 mask applies with and without amax, as the reference's.
  Tensor out = apply_scaled_minifloat_with_scales(op, xc, L, s, s, fmt, /*zero_small=*/true,
                                                  /*fake=*/true);
  if (amax.defined())
    record_clip_ste("ScaledE4M3Backward", {x, amax}, out, xc, L, eff);
  else
    record_clip_ste("ScaledE4M3Backward", {x}, out, xc, L, eff);
  return out;
}

Tensor scaled_e4m3(const Tensor& x, const Tensor& amax, int E, int M) {
  return scaled_minifloat_quant(x, amax, FloatFormat{E, M});
}

Tensor minifloat_cast(const Tensor& x, FloatFormat format) {
  static const KernelTable<FpScaledQuantKernel>& table = kernel_table(kFpScaledQuantKernels);
  const char* op = "minifloat_cast";
  check_input(op, x, table);
  const MiniFloatSpec fmt = minifloat_spec(format, op);
  const TensorOptions o = TensorOptions().dtype(x.dtype()).device(x.device());
  const BlockLayout L = make_block_layout(x.shape(), Shape(x.shape().size(), 0));
  const Tensor one = full(L.grid_shape, 1.0, o);
  const Tensor xc = x.contiguous();
  Tensor out = apply_scaled_minifloat_with_scales(op, xc, L, one, one, fmt, false, true);
  record_clip_ste("MinifloatCastBackward", {x}, out, xc, L, full(L.grid_shape, fmt.max_value, o));
  return out;
}

Tensor modelopt_scaled_fp8(const Tensor& x, const Tensor& amax, FloatFormat format) {
  static const KernelTable<FpScaledQuantKernel>& table = kernel_table(kFpScaledQuantKernels);
  const char* op = "modelopt_scaled_fp8";
  check_input(op, x, table);
  const MiniFloatSpec fmt = minifloat_spec(format, op);
  const TensorOptions o = TensorOptions().dtype(x.dtype()).device(x.device());
  const BlockLayout whole = make_block_layout(x.shape(), Shape(x.shape().size(), 0));
  const Tensor one = full(whole.grid_shape, 1.0, o);
  Tensor out, eff;
  BlockLayout L = whole;
  {
    NoGradGuard no_grad;
    if (amax.defined()) {
      check_amax(op, x, amax);
      L = amax_layout(op, x, amax);
      eff = checked_amax_copy(op, amax, x.dtype());
      const Tensor safe = where(le(eff, kMinAmax), 1.0, eff);
      const Tensor s = mul(div(1.0, safe), fmt.max_value);
      const Tensor inv = div(1.0, s);
      // Three exact passes: x * s, the cast (scale 1, no mask), * inv; each rounds as written.
      const Tensor xs = mul(x, s.reshape(amax.shape())).contiguous();
      out = mul(apply_scaled_minifloat_with_scales(op, xs, whole, one, one, fmt, false, true),
                inv.reshape(amax.shape()));
    } else {
      // Without amax modelopt casts with PyTorch's torch.float8_e4m3fn, which has no saturation:
      // anything that rounds past 448 (|x| > 464, the midpoint to the next step; a tie goes to
      // 448's even code) and +-Inf become NaN.
      QGRAD_CHECK(format == kE4M3, ValueError, op,
                  ": without amax only E4M3 is supported (modelopt casts to torch.float8_e4m3fn), "
                  "got E",
                  format.exponent_bits, "M", format.mantissa_bits);
      const Tensor cast =
          apply_scaled_minifloat_with_scales(op, x.contiguous(), whole, one, one, fmt, false, true);
      out = where(gt(abs(x), 464.0), std::numeric_limits<double>::quiet_NaN(), cast);
    }
  }
  if (amax.defined()) {
    record_clip_ste("ModeloptScaledFp8Backward", {x, amax}, out, x.contiguous(), L, eff);
  } else if (needs_grad({x})) {
    // modelopt saves nothing for backward without amax: the gradient passes everywhere.
    record("ModeloptScaledFp8Backward", {x}, {&out}, [](const TensorList& g) { return g; });
  }
  return out;
}

}  // namespace qgrad::nvidia
