// batch_norm: argument checks, the running-statistics update, and the backward rule (gradients
// of input, weight and bias from one fused kernel; in training mode the input gradient
// includes the dependence of the batch statistics on the input).
#include "ops/batch_norm/batch_norm.h"

#include <cmath>

#include "core/autograd/function.h"
#include "core/factory.h"
#include "ops/batch_norm/batch_norm_kernels.h"
#include "ops/device_check.h"

namespace qgrad {

namespace {

// A per-channel argument: undefined, or a 1-D [C] tensor of the input's dtype and device.
void check_channel_arg(const char* op, const char* name, const Tensor& t, const Tensor& x) {
  if (!t.defined()) return;
  check_same_device(op, x, t);
  QGRAD_CHECK(t.dtype() == x.dtype(), DTypeError, op, ": ", name, " must have the input's dtype ",
              dtype_name(x.dtype()), ", got ", dtype_name(t.dtype()));
  QGRAD_CHECK(t.dim() == 1 && t.size(0) == x.size(1), ShapeError, op, ": ", name,
              " must have shape [", x.size(1), "] (the channels of input shape ", x.shape(),
              "), got ", t.shape());
}

}  // namespace

void check_batch_norm_args(const char* op, const Tensor& x, const Tensor& running_mean,
                           const Tensor& running_var, const Tensor& weight, const Tensor& bias,
                           double momentum, double eps) {
  require_floating(op, "input", x);
  QGRAD_CHECK(x.dim() >= 2, ShapeError, op,
              ": expected an input of shape [N, C] or [N, C, *], got ", x.shape());
  check_channel_arg(op, "running_mean", running_mean, x);
  check_channel_arg(op, "running_var", running_var, x);
  check_channel_arg(op, "weight", weight, x);
  check_channel_arg(op, "bias", bias, x);
  QGRAD_CHECK(eps >= 0 && std::isfinite(eps), ValueError, op,
              ": eps must be a finite non-negative number, got ", eps);
  QGRAD_CHECK(std::isfinite(momentum), ValueError, op, ": momentum must be finite, got ", momentum);
  QGRAD_CHECK(running_mean.defined() == running_var.defined(), ValueError, op,
              ": running_mean and running_var must both be given or both be undefined");
}

namespace {

constexpr const char* kOp = "batch_norm";

// Per-channel parameters as contiguous data without autograd history.
Tensor channel_data(const Tensor& t) {
  return t.defined() ? t.detach().contiguous() : Tensor();
}

}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  check_batch_norm_args(kOp, x, running_mean, running_var, weight, bias, momentum, eps);
  QGRAD_CHECK(training || running_mean.defined(), ValueError, kOp,
              ": running_mean and running_var must be defined in evaluation mode");

  const std::int64_t n = x.size(0), c = x.size(1);
  std::int64_t l = 1;
  for (std::int64_t d = 2; d < x.dim(); ++d) l *= x.size(d);
  const std::int64_t count = n * l;  // values per channel
  QGRAD_CHECK(!training || count > 1, ValueError, kOp,
              ": expected more than 1 value per channel when training, got input shape ",
              x.shape());

  const TensorOptions opts = TensorOptions().dtype(x.dtype()).device(x.device());
  const Tensor xc = x.detach().contiguous().view({n, c, l});
  const Tensor w = channel_data(weight), b = channel_data(bias);
  Tensor y3 = empty({n, c, l}, opts);
  Tensor mean, var;  // the statistics the output was normalised with
  if (training) {
    mean = empty({c}, opts);
    var = empty({c}, opts);
    static const KernelTable<BatchNormTrainKernel>& train = kernel_table(kBatchNormTrainKernels);
    train(kOp, x)(xc, w, b, eps, y3, mean, var);
    if (running_mean.defined()) {
      static const KernelTable<BatchNormUpdateRunningKernel>& update =
          kernel_table(kBatchNormUpdateRunningKernels);
      update(kOp, running_mean)(running_mean, running_var, mean, var, momentum, count);
      running_mean.bump_version();
      running_var.bump_version();
    }
  } else {
    // Copies: a later training step updates the running buffers in place.
    mean = running_mean.detach().clone().contiguous();
    var = running_var.detach().clone().contiguous();
    static const KernelTable<BatchNormEvalKernel>& eval = kernel_table(kBatchNormEvalKernels);
    if (y3.numel() > 0) eval(kOp, x)(xc, mean, var, w, b, eps, y3);
  }
  Tensor y = y3.view(x.shape());

  if (needs_grad({x, weight, bias})) {
    const bool want_x = x.requires_grad();
    const bool want_w = weight.defined() && weight.requires_grad();
    const bool want_b = bias.defined() && bias.requires_grad();
    const Shape x_shape = x.shape();
    record(training ? "NativeBatchNormBackward" : "BatchNormEvalBackward", {x, weight, bias}, {&y},
           [sx = SavedTensor(xc), sw = SavedTensor(w), mean, var, eps, training, want_x, want_w,
            want_b, x_shape, opts](const TensorList& g) {
             const Tensor xs = sx.get();
             const Tensor gy = g[0].contiguous().view(xs.shape());
             Tensor gx = want_x ? empty(xs.shape(), opts) : Tensor();
             Tensor gw = want_w ? empty({xs.size(1)}, opts) : Tensor();
             Tensor gb = want_b ? empty({xs.size(1)}, opts) : Tensor();
             static const KernelTable<BatchNormBackwardKernel>& backward =
                 kernel_table(kBatchNormBackwardKernels);
             backward("batch_norm backward", gy)(gy, xs, mean, var, sw.get(), eps, training, gx, gw,
                                                 gb);
             return TensorList{want_x ? gx.view(x_shape) : Tensor(), gw, gb};
           });
  }
  return y;
}

}  // namespace qgrad
