// where and logical ops: broadcasting, dtype handling, and where's backward rule (the gradient
// goes to `a` where cond holds and to `b` elsewhere).
#include "ops/where/where.h"

#include "core/autograd/function.h"
#include "core/factory.h"
#include "ops/binary/binary.h"
#include "ops/device_check.h"
#include "ops/where/where_kernels.h"

namespace qgrad {

namespace {
Tensor as_mask(const Tensor& t) {
  if (t.dtype() == kUInt8) return t;
  return ne(t, 0.0);
}
}  // namespace

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  require_defined("where", "condition", cond);
  require_defined("where", "input", a);
  require_defined("where", "other", b);
  check_same_device("where", cond, a);
  check_same_device("where", a, b);
  const Shape shape =
      broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  const DType dt = result_type(a, b);
  Tensor out = empty(shape, TensorOptions().dtype(dt).device(a.device()));
  {
    NoGradGuard ng;
    Tensor c = as_mask(cond).expand(shape);
    Tensor ca = (a.dtype() == dt ? a : a.to(dt)).expand(shape);
    Tensor cb = (b.dtype() == dt ? b : b.to(dt)).expand(shape);
    static const KernelTable<WhereKernel>& table = kernel_table(kWhereKernels);
    if (out.numel() > 0) table("where", out)(c, ca, cb, out);
  }
  if (needs_grad({a, b})) {
    SavedTensor sc(as_mask(cond));
    Shape sa = a.shape(), sb = b.shape();
    DType da = a.dtype(), db = b.dtype();
    const bool ga = a.requires_grad(), gb = b.requires_grad();
    record("WhereBackward", {a, b}, {&out}, [=](const TensorList& g) {
      Tensor c = sc.get();
      return TensorList{ga ? grad_for_input(where(c, g[0], 0.0), sa, da) : Tensor(),
                        gb ? grad_for_input(where(c, 0.0, g[0]), sb, db) : Tensor()};
    });
  }
  return out;
}

Tensor where(const Tensor& cond, const Tensor& a, double b) {
  return where(cond, a, scalar_like(b, a));
}
Tensor where(const Tensor& cond, double a, const Tensor& b) {
  return where(cond, scalar_like(a, b), b);
}

namespace {
Tensor logical(LogicalOp op, const Tensor& a, const Tensor& b) {
  const char* name = op == LogicalOp::And  ? "logical_and"
                     : op == LogicalOp::Or ? "logical_or"
                                           : "logical_not";
  require_defined(name, "input", a);
  require_defined(name, "other", b);
  check_same_device(name, a, b);
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  Tensor out = empty(shape, TensorOptions().dtype(kUInt8).device(a.device()));
  NoGradGuard ng;
  static const KernelTable<LogicalKernel>& table = kernel_table(kLogicalKernels);
  if (out.numel() > 0)
    table(name, out)(op, as_mask(a).expand(shape), as_mask(b).expand(shape), out);
  return out;
}
}  // namespace

Tensor logical_and(const Tensor& a, const Tensor& b) {
  return logical(LogicalOp::And, a, b);
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
  return logical(LogicalOp::Or, a, b);
}
Tensor logical_not(const Tensor& a) {
  return logical(LogicalOp::Not, a, a);
}

}  // namespace qgrad
