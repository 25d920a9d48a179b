// add_grads and sum_to_shape on the "add" and "sum" kernel tables.
#include "core/autograd/grad_arith.h"

#include "core/core_kernels.h"
#include "core/factory.h"

namespace qgrad {

Tensor add_grads(const Tensor& a, const Tensor& b_in) {
  QGRAD_CHECK(a.shape() == b_in.shape(), AutogradError,
              "gradient accumulation: gradients of shape ", a.shape(), " and ", b_in.shape(),
              " cannot be summed");
  check_same_device("gradient accumulation", a, b_in);
  // A .grad set by hand may have another dtype: the sum keeps the accumulated one's.
  const Tensor b = b_in.dtype() == a.dtype() ? b_in : b_in.to(a.dtype());
  Tensor out = empty(a.shape(), TensorOptions().dtype(a.dtype()).device(a.device()));
  if (out.numel() == 0) return out;
  static const KernelTable<AddKernel>& table = kernel_table(kAddKernels);
  table("gradient accumulation", out)(a, b, out);
  return out;
}

Tensor sum_to_shape(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  const std::int64_t lead = grad.dim() - static_cast<std::int64_t>(shape.size());
  QGRAD_CHECK(lead >= 0, ShapeError, "sum_to_shape: gradient shape ", grad.shape(),
              " has fewer dims than the target shape ", shape);
  std::vector<bool> reduced(static_cast<std::size_t>(grad.dim()), false);
  bool any = false;
  for (std::int64_t d = 0; d < grad.dim(); ++d) {
    if (d < lead || (shape[d - lead] == 1 && grad.shape()[d] != 1)) {
      reduced[d] = any = true;
    } else {
      QGRAD_CHECK(shape[d - lead] == grad.shape()[d], ShapeError, "sum_to_shape: gradient shape ",
                  grad.shape(), " does not broadcast from ", shape);
    }
  }
  if (!any) return grad.reshape(shape);
  // The kernel writes the kept dims contiguously, which is `shape`'s layout.
  Tensor out = empty(shape, TensorOptions().dtype(grad.dtype()).device(grad.device()));
  if (out.numel() == 0) return out;
  static const KernelTable<SumKernel>& table = kernel_table(kSumKernels);
  table("sum_to_shape", grad)(grad, reduced, out);
  return out;
}

}  // namespace qgrad
