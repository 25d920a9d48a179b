// dropout: argument checks, mask reservation on the generator and the backward rule (the same
// mask, regenerated from the generator's seed and block offset, applied to the gradient).
#include "ops/dropout/dropout.h"

#include <cmath>

#include "core/autograd/function.h"
#include "core/factory.h"
#include "ops/device_check.h"
#include "ops/dropout/dropout_kernels.h"

namespace qgrad {

Tensor dropout(const Tensor& x, double p, bool training, Generator& gen) {
  require_floating("dropout", "input", x);
  QGRAD_CHECK(p >= 0.0 && p <= 1.0, ValueError, "dropout: probability p must be in [0, 1], got ",
              p);
  if (!training) return x;
  static const KernelTable<DropoutKernel>& table = kernel_table(kDropoutKernels);
  // Looked up before the mask is reserved: a device without a kernel leaves `gen` untouched.
  DropoutKernel& kernel = table("dropout", x);
  DropoutMask mask{gen, 0, p};
  mask.first_block = gen.reserve(static_cast<std::uint64_t>(x.numel()));
  Tensor out = empty(x.shape(), TensorOptions().dtype(x.dtype()).device(x.device()));
  kernel(x, mask, out);
  record("DropoutBackward", {x}, {&out}, [mask](const TensorList& g) {
    DropoutKernel& backward = table("dropout backward", g[0]);
    Tensor gx = empty(g[0].shape(), TensorOptions().dtype(g[0].dtype()).device(g[0].device()));
    backward(g[0], mask, gx);
    return TensorList{gx};
  });
  return out;
}

}  // namespace qgrad
