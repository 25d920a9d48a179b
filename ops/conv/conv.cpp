// conv2d: argument checks (shapes, groups, dtypes, output size), geometry, dispatch, and the
// backward rule (gradients of input, weight and bias from one recorded node).
#include "ops/conv/conv.h"

#include <tuple>
#include <utility>

#include "core/autograd/function.h"
#include "core/factory.h"
#include "ops/conv/conv_kernels.h"
#include "ops/device_check.h"

namespace qgrad {

namespace {

// A 1- or 2-value {h, w} parameter as a pair; throws ValueError naming it otherwise.
std::pair<std::int64_t, std::int64_t> pair_of(const Shape& v, const char* name, std::int64_t min,
                                              const Tensor& x, const Tensor& w) {
  QGRAD_CHECK(v.size() == 1 || v.size() == 2, ValueError, "conv2d: ", name,
              " must have 1 or 2 values ({h, w}), got ", v, " (input ", x.shape(), ", weight ",
              w.shape(), ")");
  const std::int64_t h = v[0], wv = v.size() == 2 ? v[1] : v[0];
  QGRAD_CHECK(h >= min && wv >= min, ValueError, "conv2d: ", name, " must be >= ", min, ", got ", v,
              " (input ", x.shape(), ", weight ", w.shape(), ")");
  return {h, wv};
}

Conv2dGeometry geometry(const Tensor& x, const Tensor& w, const Tensor& bias, const Shape& stride,
                        const Shape& padding, const Shape& dilation, std::int64_t groups) {
  QGRAD_CHECK(x.dim() == 4, ShapeError, "conv2d: expected a 4-D input [N, C, H, W], got shape ",
              x.shape(), " (weight ", w.shape(), ")");
  QGRAD_CHECK(w.dim() == 4, ShapeError,
              "conv2d: expected a 4-D weight [out_channels, in_channels / groups, kh, kw], got "
              "shape ",
              w.shape(), " (input ", x.shape(), ")");
  QGRAD_CHECK(groups >= 1, ValueError, "conv2d: groups must be >= 1, got ", groups, " (input ",
              x.shape(), ", weight ", w.shape(), ")");
  Conv2dGeometry g{};
  g.n = x.shape()[0];
  g.c = x.shape()[1];
  g.h = x.shape()[2];
  g.w = x.shape()[3];
  g.o = w.shape()[0];
  g.kh = w.shape()[2];
  g.kw = w.shape()[3];
  g.groups = groups;
  QGRAD_CHECK(g.c > 0 && w.shape()[1] > 0 && g.kh > 0 && g.kw > 0 && g.o > 0, ShapeError,
              "conv2d: channels and kernel sizes must be positive (input ", x.shape(), ", weight ",
              w.shape(), ")");
  QGRAD_CHECK(g.c % groups == 0 && g.o % groups == 0, ValueError, "conv2d: groups = ", groups,
              " must divide both in_channels ", g.c, " and out_channels ", g.o, " (input ",
              x.shape(), ", weight ", w.shape(), ")");
  QGRAD_CHECK(w.shape()[1] * groups == g.c, ShapeError, "conv2d: input of shape ", x.shape(),
              " has ", g.c, " channels but weight of shape ", w.shape(), " with groups = ", groups,
              " expects ", w.shape()[1] * groups);
  std::tie(g.sh, g.sw) = pair_of(stride, "stride", 1, x, w);
  std::tie(g.ph, g.pw) = pair_of(padding, "padding", 0, x, w);
  std::tie(g.dh, g.dw) = pair_of(dilation, "dilation", 1, x, w);
  const std::int64_t eff_h = g.dh * (g.kh - 1) + 1, eff_w = g.dw * (g.kw - 1) + 1;
  const std::int64_t span_h = g.h + 2 * g.ph - eff_h, span_w = g.w + 2 * g.pw - eff_w;
  g.oh = span_h < 0 ? 0 : span_h / g.sh + 1;
  g.ow = span_w < 0 ? 0 : span_w / g.sw + 1;
  QGRAD_CHECK(g.oh > 0 && g.ow > 0, ShapeError, "conv2d: the (dilated) kernel ", eff_h, "x", eff_w,
              " is larger than the padded input ", g.h + 2 * g.ph, "x", g.w + 2 * g.pw,
              ": output size would be ", span_h < 0 ? 0 : g.oh, "x", span_w < 0 ? 0 : g.ow,
              " (input ", x.shape(), ", weight ", w.shape(), ")");
  if (bias.defined())
    QGRAD_CHECK(bias.dim() == 1 && bias.shape()[0] == g.o, ShapeError,
                "conv2d: bias must be 1-D of size out_channels = ", g.o, ", got shape ",
                bias.shape(), " (input ", x.shape(), ", weight ", w.shape(), ")");
  return g;
}

void check_tensors(const Tensor& x, const Tensor& w, const Tensor& bias) {
  require_floating("conv2d", "input", x);
  require_floating("conv2d", "weight", w);
  QGRAD_CHECK(x.dtype() == w.dtype(), DTypeError, "conv2d: input is ", dtype_name(x.dtype()),
              " but weight is ", dtype_name(w.dtype()), " (input ", x.shape(), ", weight ",
              w.shape(), ")");
  check_same_device("conv2d", x, w);
  if (bias.defined()) {
    QGRAD_CHECK(bias.dtype() == x.dtype(), DTypeError, "conv2d: bias is ", dtype_name(bias.dtype()),
                " but input is ", dtype_name(x.dtype()), " (input ", x.shape(), ", weight ",
                w.shape(), ", bias ", bias.shape(), ")");
    check_same_device("conv2d", x, bias);
  }
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Shape& stride,
              const Shape& padding, const Shape& dilation, std::int64_t groups) {
  check_tensors(x, weight, bias);
  const Conv2dGeometry g = geometry(x, weight, bias, stride, padding, dilation, groups);
  const TensorOptions opts = TensorOptions().dtype(x.dtype()).device(x.device());
  Tensor y = empty({g.n, g.o, g.oh, g.ow}, opts);

  const bool grad = needs_grad({x, weight, bias});
  const bool need_x = grad && x.requires_grad(), need_w = grad && weight.requires_grad();
  const bool need_b = grad && bias.defined() && bias.requires_grad();
  std::shared_ptr<Conv2dForwardState> state;
  static const KernelTable<Conv2dForwardKernel>& forward = kernel_table(kConv2dForwardKernels);
  // The backward of the input needs the weights, those of weight and bias need the input.
  forward("conv2d", x)(g, x.detach(), weight.detach(), bias.defined() ? bias.detach() : Tensor(), y,
                       grad ? &state : nullptr, need_w || need_b, need_x);
  if (!grad) return y;

  SavedTensor sx(need_w || need_b ? x : Tensor()), sw(need_x ? weight : Tensor());
  record("Conv2dBackward", {x, weight, bias}, {&y}, [=](const TensorList& grads) {
    const Tensor& gy = grads[0];
    const TensorOptions o = TensorOptions().dtype(gy.dtype()).device(gy.device());
    Tensor gx = need_x ? empty({g.n, g.c, g.h, g.w}, o) : Tensor();
    Tensor gw = need_w ? empty({g.o, g.c / g.groups, g.kh, g.kw}, o) : Tensor();
    Tensor gb = need_b ? empty({g.o}, o) : Tensor();
    // Saved tensors are undefined where not needed; the kernel only reads what it uses.
    Tensor xs = sx.get(), ws = sw.get();
    static const KernelTable<Conv2dBackwardKernel>& backward = kernel_table(kConv2dBackwardKernels);
    backward("conv2d backward", gy)(g, gy, xs, ws, state.get(), gx, gw, gb);
    return TensorList{gx, gw, gb};
  });
  return y;
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
              const Conv2dOptions& options) {
  return conv2d(x, weight, bias, options.stride_, options.padding_, options.dilation_,
                options.groups_);
}

}  // namespace qgrad
