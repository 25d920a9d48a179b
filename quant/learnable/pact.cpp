// PACT: checks, dispatch through the "learnable.pact_*" kernel tables and the backward rule
// (alpha's gradient summed to its shape).
#include "quant/learnable/pact.h"

#include <cmath>

#include "core/autograd/function.h"
#include "core/factory.h"
#include "ops/binary/binary.h"
#include "ops/device_check.h"
#include "ops/reduce/reduce.h"
#include "quant/learnable/pact_bits.h"
#include "quant/learnable/pact_kernels.h"
#include "quant/parameter_check_kernels.h"
#include "quant/torch_ao/qparam_checks.h"

namespace qgrad::learnable {

using ao::check_broadcast_param;

namespace {

Tensor apply(const char* op, const Tensor& x, const Tensor& alpha, std::int64_t levels) {
  static const KernelTable<PactForwardKernel>& table = kernel_table(kPactForwardKernels);
  require_floating(op, "input", x);
  static const KernelTable<quant::CheckParameterKernel>& checks =
      kernel_table(quant::kCheckParameterKernels);
  PactForwardKernel& forward = table(op, x);
  check_broadcast_param(op, "alpha", alpha, x);
  // On a GPU a kernel: the host does not wait for alpha's value.
  checks(op, alpha)(op, CheckedParameter::Alpha, ParameterRule::FiniteAndPositive, alpha.detach());
  Tensor y = empty(x.shape(), TensorOptions().dtype(x.dtype()).device(x.device()));
  forward(x, alpha.detach().expand(x.shape()), levels, y);
  if (!needs_grad({x, alpha})) return y;
  record("PactBackward", {x, alpha}, {&y},
         [op, sx = SavedTensor(x), sa = SavedTensor(alpha)](const TensorList& g) {
           static const KernelTable<PactBackwardKernel>& backward =
               kernel_table(kPactBackwardKernels);
           const Tensor xs = sx.get(), a = sa.get();
           const TensorOptions o = TensorOptions().dtype(xs.dtype()).device(xs.device());
           Tensor dx = empty(xs.shape(), o), da = empty(xs.shape(), o);
           backward(op, g[0])(g[0], xs, a.expand(xs.shape()), dx, da);
           return TensorList{dx, sum_to_shape(da, a.shape())};
         });
  return y;
}

}  // namespace

Tensor pact_clip(const Tensor& x, const Tensor& alpha) {
  return apply("pact_clip", x, alpha, 0);
}

Tensor pact_quantize(const Tensor& x, const Tensor& alpha, int num_bits) {
  QGRAD_CHECK(num_bits >= kPactMinBits && num_bits <= kPactMaxBits, ValueError,
              "pact_quantize: num_bits must lie in [", kPactMinBits, ", ", kPactMaxBits, "], got ",
              num_bits);
  return apply("pact_quantize", x, alpha, (std::int64_t{1} << num_bits) - 1);
}

Tensor pact_alpha_penalty(const Tensor& alpha, double weight) {
  require_floating("pact_alpha_penalty", "alpha", alpha);
  return mul(sum(mul(alpha, alpha)), weight);
}

}  // namespace qgrad::learnable
