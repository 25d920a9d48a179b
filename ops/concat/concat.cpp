// concat / stack: argument checks naming the offending tensor, dtype promotion, and the backward
// rule (each input's gradient is its slice of the output gradient, converted back to the
// input's dtype).
#include "ops/concat/concat.h"

#include "core/autograd/function.h"
#include "core/factory.h"
#include "ops/concat/concat_kernels.h"

namespace qgrad {

namespace {

// torch.cat's legacy rule: a 1-D tensor with no elements joins anything.
bool skipped(const Tensor& t) {
  return t.dim() == 1 && t.shape()[0] == 0;
}

// The concatenation behind concat and stack; `op` (either) names the op in the error for a
// device without a kernel.
Tensor join(const std::vector<Tensor>& tensors, std::int64_t dim, const char* op) {
  QGRAD_CHECK(!tensors.empty(), ValueError, "concat: expected a non-empty list of tensors");
  std::int64_t ref = -1;  // index of the tensor giving the rank and the other sizes
  DType dt = DType::Float32;
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    const Tensor& t = tensors[k];
    QGRAD_CHECK(t.defined(), ValueError, "concat: tensor ", k, " is undefined");
    check_same_device("concat", tensors[0], t);
    QGRAD_CHECK(t.dim() > 0, ShapeError, "concat: tensor ", k,
                " is 0-d and cannot be concatenated (use stack, or reshape it to [1])");
    dt = k == 0 ? t.dtype() : promote_types(dt, t.dtype());
    if (ref < 0 && !skipped(t)) ref = static_cast<std::int64_t>(k);
  }
  if (ref < 0) ref = 0;  // every tensor is [0]: the result is [0]
  const Tensor& r = tensors[static_cast<std::size_t>(ref)];
  const std::int64_t d = wrap_dim(dim, r.dim(), "concat");

  Shape out_shape = r.shape();
  out_shape[d] = 0;
  std::vector<std::int64_t> offsets(tensors.size(), 0);
  std::vector<Tensor> parts;
  std::vector<std::int64_t> part_offsets;
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    const Tensor& t = tensors[k];
    if (skipped(t) && static_cast<std::int64_t>(k) != ref) continue;
    QGRAD_CHECK(t.dim() == r.dim(), ShapeError, "concat: tensor ", k, " has ", t.dim(),
                " dims (shape ", t.shape(), ") but tensor ", ref, " has ", r.dim(), " (shape ",
                r.shape(), ")");
    for (std::int64_t i = 0; i < r.dim(); ++i)
      QGRAD_CHECK(i == d || t.shape()[i] == r.shape()[i], ShapeError, "concat: tensor ", k,
                  " has shape ", t.shape(), " but tensor ", ref, " has shape ", r.shape(),
                  "; sizes must match except in dimension ", d);
    offsets[k] = out_shape[d];
    out_shape[d] += t.shape()[d];
    parts.push_back(t);
    part_offsets.push_back(offsets[k]);
  }

  Tensor out = empty(out_shape, TensorOptions().dtype(dt).device(r.device()));
  static const KernelTable<ConcatKernel>& table = kernel_table(kConcatKernels);
  table(op, out)(parts, part_offsets, d, out);

  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  std::vector<bool> in_out;  // contributes a slice of the output
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    shapes.push_back(tensors[k].shape());
    dtypes.push_back(tensors[k].dtype());
    in_out.push_back(!skipped(tensors[k]) || static_cast<std::int64_t>(k) == ref);
  }
  record("ConcatBackward", tensors, {&out}, [=](const TensorList& g) {
    TensorList grads(shapes.size());
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      if (!is_floating(dtypes[k])) continue;
      if (!in_out[k]) {
        grads[k] = zeros(shapes[k], TensorOptions().dtype(dtypes[k]).device(g[0].device()));
        continue;
      }
      Tensor slice = g[0].narrow(d, offsets[k], shapes[k][d]);
      grads[k] = slice.dtype() == dtypes[k] ? slice : slice.to(dtypes[k]);
    }
    return grads;
  });
  return out;
}

}  // namespace

Tensor concat(const std::vector<Tensor>& tensors, std::int64_t dim) {
  return join(tensors, dim, "concat");
}

Tensor stack(const std::vector<Tensor>& tensors, std::int64_t dim) {
  QGRAD_CHECK(!tensors.empty(), ValueError, "stack: expected a non-empty list of tensors");
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    QGRAD_CHECK(tensors[k].defined(), ValueError, "stack: tensor ", k, " is undefined");
    check_same_device("stack", tensors[0], tensors[k]);
    QGRAD_CHECK(tensors[k].shape() == tensors[0].shape(), ShapeError,
                "stack: expected all tensors to have the same shape, but tensor 0 has shape ",
                tensors[0].shape(), " and tensor ", k, " has shape ", tensors[k].shape());
  }
  const std::int64_t d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> views;
  views.reserve(tensors.size());
  for (const Tensor& t : tensors) views.push_back(t.unsqueeze(d));
  return join(views, d, "stack");
}

}  // namespace qgrad
