// Two-sided learnable clip: checks, dispatch through the "learnable.clip_*" kernel tables and the
// backward rule.
#include "quant/learnable/learnable_clip.h"

#include "core/autograd/function.h"
#include "core/factory.h"
#include "ops/binary/binary.h"
#include "ops/device_check.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"
#include "quant/learnable/learnable_clip_kernels.h"
#include "quant/parameter_check_kernels.h"
#include "quant/torch_ao/qparam_checks.h"

namespace qgrad::learnable {

using ao::check_broadcast_param;

Tensor learnable_clip(const Tensor& x, const Tensor& cmin, const Tensor& cmax) {
  static const KernelTable<LearnableClipForwardKernel>& table =
      kernel_table(kLearnableClipForwardKernels);
  const char* op = "learnable_clip";
  require_floating(op, "input", x);
  LearnableClipForwardKernel& forward = table(op, x);
  check_broadcast_param(op, "cmin", cmin, x);
  check_broadcast_param(op, "cmax", cmax, x);
  // Checked where the bounds live (a GPU reports at the host's next wait): scalar bounds by
  // their width in double (NaN in either, or cmin > cmax, fails), tensor bounds each for NaN.
  static const KernelTable<quant::CheckParameterKernel>& checks =
      kernel_table(quant::kCheckParameterKernels);
  if (cmin.numel() == 1 && cmax.numel() == 1) {
    const Tensor width = sub(cmax.detach().to(DType::Float64), cmin.detach().to(DType::Float64));
    checks(op, width)(op, CheckedParameter::ClipWidth, ParameterRule::NonNegative, width);
  } else {
    checks(op, cmin)(op, CheckedParameter::ClipMin, ParameterRule::NotNaN,
                     cmin.detach().contiguous());
    checks(op, cmax)(op, CheckedParameter::ClipMax, ParameterRule::NotNaN,
                     cmax.detach().contiguous());
  }
  Tensor y = empty(x.shape(), TensorOptions().dtype(x.dtype()).device(x.device()));
  forward(x, cmin.detach().expand(x.shape()), cmax.detach().expand(x.shape()), y);
  if (!needs_grad({x, cmin, cmax})) return y;
  record("LearnableClipBackward", {x, cmin, cmax}, {&y},
         [op, sx = SavedTensor(x), sl = SavedTensor(cmin),
          sh = SavedTensor(cmax)](const TensorList& g) {
           static const KernelTable<LearnableClipBackwardKernel>& backward =
               kernel_table(kLearnableClipBackwardKernels);
           const Tensor xs = sx.get(), l = sl.get(), h = sh.get();
           const TensorOptions o = TensorOptions().dtype(xs.dtype()).device(xs.device());
           Tensor dx = empty(xs.shape(), o), dl = empty(xs.shape(), o), dh = empty(xs.shape(), o);
           backward(op, g[0])(g[0], xs, l.expand(xs.shape()), h.expand(xs.shape()), dx, dl, dh);
           return TensorList{dx, sum_to_shape(dl, l.shape()), sum_to_shape(dh, h.shape())};
         });
  return y;
}

Tensor learnable_clip_amax(const Tensor& cmin, const Tensor& cmax) {
  return maximum(neg(cmin), cmax);
}

}  // namespace qgrad::learnable
