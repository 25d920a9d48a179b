// pad: argument checks (pad count, mode, per-mode limits, output sizes), dispatch, and the
// backward rules: constant mode's gradient is the output gradient padded back with the pads
// negated (a crop, with zeros where the forward cropped); the mapping modes scatter-add.
#include "ops/pad/pad.h"

#include <cmath>
#include <limits>

#include "core/autograd/function.h"
#include "core/factory.h"
#include "ops/device_check.h"
#include "ops/pad/pad_kernels.h"

namespace qgrad {

namespace {

PadMode parse_mode(const std::string& mode) {
  if (mode == "constant") return PadMode::Constant;
  if (mode == "reflect") return PadMode::Reflect;
  if (mode == "replicate") return PadMode::Replicate;
  if (mode == "circular") return PadMode::Circular;
  throw ValueError("pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got '" +
                   mode + "'");
}

// A fill value must be representable in the input's dtype (integers then truncate it; floats
// also take +-inf and NaN).
void check_value(const Tensor& x, double value) {
  if (is_floating(x.dtype())) {
    QGRAD_CHECK(!std::isfinite(value) || x.dtype() == kFloat64 ||
                    std::abs(value) <= static_cast<double>(std::numeric_limits<float>::max()),
                ValueError, "pad: value ", value, " is out of the range of float32");
    return;
  }
  double lo = 0, hi = 0;
  QGRAD_DISPATCH_ALL(x.dtype(), "pad", [&] {
    lo = static_cast<double>(std::numeric_limits<scalar_t>::lowest());
    hi = static_cast<double>(std::numeric_limits<scalar_t>::max());
  });
  QGRAD_CHECK(std::isfinite(value) && value >= lo && value <= hi, ValueError, "pad: value ", value,
              " cannot be converted to the input's dtype ", dtype_name(x.dtype()));
}

}  // namespace

Tensor pad(const Tensor& x, const std::vector<std::int64_t>& pads, const std::string& mode,
           double value) {
  require_defined("pad", "input", x);
  const PadMode pm = parse_mode(mode);
  QGRAD_CHECK(pads.size() % 2 == 0, ValueError,
              "pad: the pads come in (left, right) pairs, got an odd number (", pads.size(), ")");
  const std::int64_t npad = static_cast<std::int64_t>(pads.size()) / 2;
  QGRAD_CHECK(npad <= x.dim(), ValueError, "pad: ", pads.size(), " pad values pad ", npad,
              " dims but the input has only ", x.dim(), " (shape ", x.shape(), ")");
  QGRAD_CHECK(pm == PadMode::Constant || value == 0.0, ValueError, "pad: mode '", mode,
              "' does not take a fill value (got ", value, ")");
  check_value(x, value);
  if (npad == 0) return x.clone();

  PadPlan plan;
  plan.mode = pm;
  plan.in_shape = x.shape();
  plan.out_shape = x.shape();
  plan.left.assign(plan.in_shape.size(), 0);
  plan.right.assign(plan.in_shape.size(), 0);
  for (std::int64_t k = 0; k < npad; ++k) {
    const std::size_t d = static_cast<std::size_t>(x.dim() - 1 - k);
    const std::int64_t l = pads[2 * k], r = pads[2 * k + 1], n = x.shape()[d];
    plan.left[d] = l;
    plan.right[d] = r;
    plan.out_shape[d] = n + l + r;
    QGRAD_CHECK(plan.out_shape[d] >= 0, ShapeError, "pad: dimension ", d, " of size ", n,
                " padded by (", l, ", ", r, ") would have negative size ", plan.out_shape[d],
                " (input shape ", x.shape(), ")");
    if (pm == PadMode::Constant) continue;
    QGRAD_CHECK(n > 0, ShapeError, "pad: mode '", mode, "' needs a non-empty dimension ", d,
                " to pad from (input shape ", x.shape(), ")");
    if (pm == PadMode::Reflect)
      QGRAD_CHECK(l < n && r < n, ValueError, "pad: reflect padding (", l, ", ", r,
                  ") of dimension ", d, " must be smaller than its size ", n, " (input shape ",
                  x.shape(), ")");
    if (pm == PadMode::Circular) {
      QGRAD_CHECK(l <= n && r <= n, ValueError, "pad: circular padding (", l, ", ", r,
                  ") of dimension ", d, " would wrap around more than once (size ", n,
                  ", input shape ", x.shape(), ")");
      QGRAD_CHECK(n + std::min<std::int64_t>(l, 0) + std::min<std::int64_t>(r, 0) > 0, ValueError,
                  "pad: circular padding (", l, ", ", r, ") crops dimension ", d, " of size ", n,
                  " to nothing and cannot wrap it");
    }
  }

  Tensor out = empty(plan.out_shape, TensorOptions().dtype(x.dtype()).device(x.device()));
  static const KernelTable<PadKernel>& forward = kernel_table(kPadKernels);
  forward("pad", x)(x, plan, value, out);
  record("PadBackward", {x}, {&out}, [plan](const TensorList& g) {
    const TensorOptions o = TensorOptions().dtype(g[0].dtype()).device(g[0].device());
    if (plan.mode == PadMode::Constant) {
      PadPlan back;
      back.in_shape = plan.out_shape;
      back.out_shape = plan.in_shape;
      for (std::size_t d = 0; d < plan.left.size(); ++d) {
        back.left.push_back(-plan.left[d]);
        back.right.push_back(-plan.right[d]);
      }
      Tensor gx = empty(plan.in_shape, o);
      forward("pad backward", g[0])(g[0], back, 0.0, gx);
      return TensorList{gx};
    }
    Tensor gx = zeros(plan.in_shape, o);
    static const KernelTable<PadBackwardKernel>& backward = kernel_table(kPadBackwardKernels);
    backward("pad backward", g[0])(g[0], plan, gx);
    return TensorList{gx};
  });
  return out;
}

}  // namespace qgrad
