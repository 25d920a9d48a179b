// Binary ops: type promotion, broadcasting, device dispatch, and each op's backward rule.
#include "ops/binary/binary.h"

#include <cmath>

#include "core/autograd/function.h"
#include "core/factory.h"
#include "ops/binary/binary_cpu.h"
#include "ops/device_check.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"
#include "ops/where/where.h"

namespace qgrad {

const char* binary_op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return "add";
    case BinaryOp::Sub:
      return "sub";
    case BinaryOp::Mul:
      return "mul";
    case BinaryOp::Div:
      return "div";
    case BinaryOp::Pow:
      return "pow";
    case BinaryOp::Maximum:
      return "maximum";
    case BinaryOp::Minimum:
      return "minimum";
    case BinaryOp::Eq:
      return "eq";
    case BinaryOp::Ne:
      return "ne";
    case BinaryOp::Lt:
      return "lt";
    case BinaryOp::Le:
      return "le";
    case BinaryOp::Gt:
      return "gt";
    case BinaryOp::Ge:
      return "ge";
  }
  return "binary";
}

namespace {

bool is_comparison(BinaryOp op) {
  return op == BinaryOp::Eq || op == BinaryOp::Ne || op == BinaryOp::Lt || op == BinaryOp::Le ||
         op == BinaryOp::Gt || op == BinaryOp::Ge;
}

// Computes a op b without autograd: promotes dtypes, broadcasts, allocates the result.
Tensor compute(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = binary_op_name(op);
  require_defined(name, "self", a);
  require_defined(name, "other", b);
  check_same_device(name, a, b);
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  DType ct = promote_types(a.dtype(), b.dtype());
  if (op == BinaryOp::Div && !is_floating(ct)) ct = kFloat32;  // true division, as in PyTorch
  if (op == BinaryOp::Pow && !is_floating(ct)) ct = kFloat32;
  NoGradGuard no_grad;
  Tensor ca = a.dtype() == ct ? a : a.to(ct);
  Tensor cb = b.dtype() == ct ? b : b.to(ct);
  if (ca.shape() != shape) ca = ca.expand(shape);
  if (cb.shape() != shape) cb = cb.expand(shape);
  Tensor out =
      empty(shape, TensorOptions().dtype(is_comparison(op) ? kUInt8 : ct).device(a.device()));
  binary_kernel(op, ca, cb, out);
  return out;
}

}  // namespace

void binary_kernel(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  if (out.numel() == 0) return;
  require_cpu(binary_op_name(op), out);
  binary_cpu(op, a, b, out);
}

Tensor scalar_like(double v, const Tensor& like) {
  DType dt = like.dtype();
  if (!is_floating(dt) && v != std::floor(v)) dt = kFloat32;
  return scalar_tensor(v, TensorOptions().dtype(dt).device(like.device()));
}

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = compute(BinaryOp::Add, a, b);
  Shape sa = a.shape(), sb = b.shape();
  record("AddBackward", {a, b}, {&out}, [sa, sb](const TensorList& g) {
    return TensorList{sum_to_shape(g[0], sa), sum_to_shape(g[0], sb)};
  });
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = compute(BinaryOp::Sub, a, b);
  Shape sa = a.shape(), sb = b.shape();
  record("SubBackward", {a, b}, {&out}, [sa, sb](const TensorList& g) {
    return TensorList{sum_to_shape(g[0], sa), sum_to_shape(neg(g[0]), sb)};
  });
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = compute(BinaryOp::Mul, a, b);
  const bool ga = a.requires_grad(), gb = b.requires_grad();
  SavedTensor sa(gb ? a : Tensor()), sb(ga ? b : Tensor());
  Shape sha = a.shape(), shb = b.shape();
  record("MulBackward", {a, b}, {&out}, [=](const TensorList& g) {
    return TensorList{ga ? sum_to_shape(mul(g[0], sb.get()), sha) : Tensor(),
                      gb ? sum_to_shape(mul(g[0], sa.get()), shb) : Tensor()};
  });
  return out;
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = compute(BinaryOp::Div, a, b);
  const bool gb = b.requires_grad();
  SavedTensor sb(b), sout(gb ? out : Tensor());
  Shape sha = a.shape(), shb = b.shape();
  record("DivBackward", {a, b}, {&out}, [=](const TensorList& g) {
    Tensor bv = sb.get();
    Tensor gx = div(g[0], bv);
    // d(a/b)/db = -(a/b)/b
    Tensor gy = gb ? sum_to_shape(neg(mul(gx, sout.get())), shb) : Tensor();
    return TensorList{sum_to_shape(gx, sha), gy};
  });
  return out;
}

Tensor pow(const Tensor& a, const Tensor& b) {
  Tensor out = compute(BinaryOp::Pow, a, b);
  const bool gb = b.requires_grad();
  SavedTensor sa(a), sb(b), sout(gb ? out : Tensor());
  Shape sha = a.shape(), shb = b.shape();
  record("PowBackward", {a, b}, {&out}, [=](const TensorList& g) {
    Tensor av = sa.get(), bv = sb.get();
    Tensor ga = mul(g[0], mul(bv, pow(av, sub(bv, 1.0))));
    // Where the gradient is 0 anyway (exponent 0), keep it 0 rather than NaN from 0^-1.
    ga = where(eq(bv, 0.0), zeros_like(ga), ga);
    Tensor gy;
    if (gb) {
      Tensor lg = mul(g[0], mul(sout.get(), log(av)));
      // d/db of a^b at a == 0 (with b > 0) is 0 by convention, not NaN from log(0) * 0.
      gy = sum_to_shape(where(logical_and(eq(av, 0.0), ge(bv, 0.0)), zeros_like(lg), lg), shb);
    }
    return TensorList{sum_to_shape(ga, sha), gy};
  });
  return out;
}

namespace {
// Gradient mask for maximum/minimum: 1 where `a` wins, 0.5 on ties, 0 where it loses.
Tensor win_mask(const Tensor& a, const Tensor& b, bool is_max) {
  Tensor wins = (is_max ? gt(a, b) : lt(a, b)).to(a.dtype());
  Tensor ties = eq(a, b).to(a.dtype());
  return add(wins, mul(ties, 0.5));
}

Tensor max_min(BinaryOp op, const Tensor& a, const Tensor& b) {
  Tensor out = compute(op, a, b);
  const bool is_max = op == BinaryOp::Maximum;
  SavedTensor sa(a), sb(b);
  Shape sha = a.shape(), shb = b.shape();
  record(is_max ? "MaximumBackward" : "MinimumBackward", {a, b}, {&out}, [=](const TensorList& g) {
    Tensor av = sa.get(), bv = sb.get();
    return TensorList{sum_to_shape(mul(g[0], win_mask(av, bv, is_max)), sha),
                      sum_to_shape(mul(g[0], win_mask(bv, av, is_max)), shb)};
  });
  return out;
}
}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) {
  return max_min(BinaryOp::Maximum, a, b);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return max_min(BinaryOp::Minimum, a, b);
}

Tensor eq(const Tensor& a, const Tensor& b) {
  return compute(BinaryOp::Eq, a, b);
}
Tensor ne(const Tensor& a, const Tensor& b) {
  return compute(BinaryOp::Ne, a, b);
}
Tensor lt(const Tensor& a, const Tensor& b) {
  return compute(BinaryOp::Lt, a, b);
}
Tensor le(const Tensor& a, const Tensor& b) {
  return compute(BinaryOp::Le, a, b);
}
Tensor gt(const Tensor& a, const Tensor& b) {
  return compute(BinaryOp::Gt, a, b);
}
Tensor ge(const Tensor& a, const Tensor& b) {
  return compute(BinaryOp::Ge, a, b);
}

Tensor add(const Tensor& a, double b) {
  return add(a, scalar_like(b, a));
}
Tensor sub(const Tensor& a, double b) {
  return sub(a, scalar_like(b, a));
}
Tensor sub(double a, const Tensor& b) {
  return sub(scalar_like(a, b), b);
}
Tensor mul(const Tensor& a, double b) {
  return mul(a, scalar_like(b, a));
}
Tensor div(const Tensor& a, double b) {
  return div(a, scalar_like(b, a));
}
Tensor div(double a, const Tensor& b) {
  return div(scalar_like(a, b), b);
}
Tensor pow(const Tensor& a, double e) {
  return pow(a, scalar_like(e, a));
}
Tensor maximum(const Tensor& a, double b) {
  return maximum(a, scalar_like(b, a));
}
Tensor minimum(const Tensor& a, double b) {
  return minimum(a, scalar_like(b, a));
}
Tensor eq(const Tensor& a, double b) {
  return eq(a, scalar_like(b, a));
}
Tensor ne(const Tensor& a, double b) {
  return ne(a, scalar_like(b, a));
}
Tensor lt(const Tensor& a, double b) {
  return lt(a, scalar_like(b, a));
}
Tensor le(const Tensor& a, double b) {
  return le(a, scalar_like(b, a));
}
Tensor gt(const Tensor& a, double b) {
  return gt(a, scalar_like(b, a));
}
Tensor ge(const Tensor& a, double b) {
  return ge(a, scalar_like(b, a));
}

Tensor operator-(const Tensor& a) {
  return neg(a);
}

}  // namespace qgrad
