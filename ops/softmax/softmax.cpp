// softmax / log_softmax: argument checks, dispatch and the backward rules, which need only the
// saved output (y * (g - sum(g * y)) and g - exp(y) * sum(g)).
#include "ops/softmax/softmax.h"

#include "core/autograd/function.h"
#include "core/factory.h"
#include "ops/device_check.h"
#include "ops/softmax/softmax_kernels.h"

namespace qgrad {

namespace {

Tensor softmax_impl(const Tensor& x, std::int64_t dim, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  require_floating(name, "input", x);
  const std::int64_t d = wrap_dim(dim, x.dim(), name);  // a 0-d input accepts 0 and -1
  Tensor out = empty(x.shape(), TensorOptions().dtype(x.dtype()).device(x.device()));
  static const KernelTable<SoftmaxKernel>& forward = kernel_table(kSoftmaxKernels);
  forward(name, x)(x, d, log, out);
  SavedTensor sy(out);
  record(log ? "LogSoftmaxBackward" : "SoftmaxBackward", {x}, {&out},
         [sy, d, log](const TensorList& g) {
           Tensor y = sy.get();
           Tensor gx = empty(y.shape(), TensorOptions().dtype(y.dtype()).device(y.device()));
           static const KernelTable<SoftmaxBackwardKernel>& backward =
               kernel_table(kSoftmaxBackwardKernels);
           backward(log ? "log_softmax backward" : "softmax backward", g[0])(g[0], y, d, log, gx);
           return TensorList{gx};
         });
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x, std::int64_t dim) {
  return softmax_impl(x, dim, false);
}

Tensor log_softmax(const Tensor& x, std::int64_t dim) {
  return softmax_impl(x, dim, true);
}

}  // namespace qgrad
