// matmul and linear: argument checks, the 1-D and broadcasting rules of torch.matmul, and the
// backward rules (products with transposed views, summed back over broadcast batch dims).
#include "ops/matmul/matmul.h"

#include "core/autograd/function.h"
#include "core/factory.h"
#include "ops/device_check.h"
#include "ops/matmul/matmul_kernels.h"
#include "ops/reduce/reduce.h"

namespace qgrad {

namespace {

const KernelTable<MatmulKernel>& matmul_kernels() {
  static const KernelTable<MatmulKernel>& table = kernel_table(kMatmulKernels);
  return table;
}

// Prepends size-1 dims to a detached `t` until it has `rank` dims.
Tensor to_rank(const Tensor& t, std::size_t rank) {
  Tensor r = t;
  while (static_cast<std::size_t>(r.dim()) < rank) r = r.unsqueeze(0);
  return r;
}

Shape batch_of(const Tensor& t) {
  return Shape(t.shape().begin(), t.shape().end() - 2);
}

// a [..., M, K] @ b [..., K, N] on detached tensors of at least 2 dims (+ bias [N]).
Tensor product(const Tensor& a, const Tensor& b, const Tensor& bias = Tensor()) {
  Shape shape = broadcast_shapes(batch_of(a), batch_of(b), "matmul");
  shape.push_back(a.shape()[a.dim() - 2]);
  shape.push_back(b.shape()[b.dim() - 1]);
  Tensor out = empty(shape, TensorOptions().dtype(a.dtype()).device(a.device()));
  matmul_kernels()("matmul", a)(to_rank(a, shape.size()), to_rank(b, shape.size()), bias, out);
  return out;
}

void check_operands(const char* op, const char* an, const Tensor& a, const char* bn,
                    const Tensor& b) {
  require_floating(op, an, a);
  require_floating(op, bn, b);
  QGRAD_CHECK(a.dtype() == b.dtype(), DTypeError, op, ": '", an, "' is ", dtype_name(a.dtype()),
              " but '", bn, "' is ", dtype_name(b.dtype()), " (shapes ", a.shape(), " and ",
              b.shape(), ")");
  check_same_device(op, a, b);
}

// The differentiable product of operands with at least 2 dims each.
Tensor matmul_nd(const Tensor& a, const Tensor& b) {
  const std::int64_t K = a.shape()[a.dim() - 1];
  QGRAD_CHECK(b.shape()[b.dim() - 2] == K, ShapeError, "matmul: shapes ", a.shape(), " and ",
              b.shape(), " cannot be multiplied (", K, " columns vs ", b.shape()[b.dim() - 2],
              " rows)");
  Tensor out = product(a.detach(), b.detach());
  if (!needs_grad({a, b})) return out;
  const bool need_a = a.requires_grad(), need_b = b.requires_grad();
  SavedTensor sa(need_b ? a : Tensor()), sb(need_a ? b : Tensor());
  const Shape a_shape = a.shape(), b_shape = b.shape();
  record("MatmulBackward", {a, b}, {&out}, [=](const TensorList& g) {
    const Tensor& go = g[0];
    Tensor ga, gb;
    if (need_a) {
      Tensor bt = sb.get();
      ga = sum_to_shape(product(go, bt.transpose(-1, -2)), a_shape);
    }
    if (need_b) {
      Tensor at = sa.get();
      if (b_shape.size() == 2) {
        // b has no batch dims: fold a's batch into its rows, one [K, rows] @ [rows, N] product.
        const std::int64_t K = a_shape.back(), N = b_shape.back();
        const std::int64_t rows = numel_of(Shape(a_shape.begin(), a_shape.end() - 1));
        gb = product(at.reshape({rows, K}).t(), go.reshape({rows, N}));
      } else {
        gb = sum_to_shape(product(at.transpose(-1, -2), go), b_shape);
      }
    }
    return TensorList{ga, gb};
  });
  return out;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_operands("matmul", "a", a, "b", b);
  QGRAD_CHECK(a.dim() >= 1 && b.dim() >= 1, ShapeError,
              "matmul: both arguments need at least 1 dim, got shapes ", a.shape(), " and ",
              b.shape());
  if (a.dim() == 1 && b.dim() == 1) {
    QGRAD_CHECK(a.shape()[0] == b.shape()[0], ShapeError, "matmul: 1-D operands of shapes ",
                a.shape(), " and ", b.shape(), " differ in length");
    return matmul_nd(a.unsqueeze(0), b.unsqueeze(1)).reshape({});
  }
  if (a.dim() == 1) {
    Tensor r = matmul_nd(a.unsqueeze(0), b);
    return r.squeeze(r.dim() - 2);
  }
  if (b.dim() == 1) {
    Tensor r = matmul_nd(a, b.unsqueeze(1));
    return r.squeeze(r.dim() - 1);
  }
  return matmul_nd(a, b);
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_operands("linear", "input", x, "weight", weight);
  QGRAD_CHECK(weight.dim() == 2, ShapeError, "linear: weight must be 2-D [out, in], got shape ",
              weight.shape());
  QGRAD_CHECK(x.dim() >= 1 && x.shape().back() == weight.shape()[1], ShapeError,
              "linear: input of shape ", x.shape(), " does not end in in_features ",
              weight.shape()[1], " of weight of shape ", weight.shape());
  const std::int64_t in = weight.shape()[1], out_f = weight.shape()[0];
  if (bias.defined()) {
    check_operands("linear", "weight", weight, "bias", bias);
    QGRAD_CHECK(bias.dim() == 1 && bias.shape()[0] == out_f, ShapeError,
                "linear: bias must be 1-D of size ", out_f, " (weight of shape ", weight.shape(),
                "), got shape ", bias.shape());
  }
  Shape out_shape(x.shape().begin(), x.shape().end() - 1);
  out_shape.push_back(out_f);
  Tensor out = empty(out_shape, TensorOptions().dtype(x.dtype()).device(x.device()));
  const std::int64_t rows = numel_of(Shape(x.shape().begin(), x.shape().end() - 1));
  const Tensor x2 = x.detach().reshape({rows, in});
  matmul_kernels()("linear", x)(x2, weight.detach().t(), bias.defined() ? bias.detach() : Tensor(),
                                out.view({rows, out_f}));
  if (!needs_grad({x, weight, bias})) return out;
  const bool need_x = x.requires_grad(), need_w = weight.requires_grad();
  const bool need_b = bias.defined() && bias.requires_grad();
  SavedTensor sx(need_w ? x2 : Tensor()), sw(need_x ? weight : Tensor());
  const Shape x_shape = x.shape();
  record("LinearBackward", {x, weight, bias}, {&out}, [=](const TensorList& g) {
    const Tensor g2 = g[0].reshape({rows, out_f});
    Tensor gx, gw, gb;
    if (need_x) gx = product(g2, sw.get()).view(x_shape);  // [rows, out] @ [out, in]
    if (need_w) gw = product(g2.t(), sx.get());            // [out, rows] @ [rows, in]
    if (need_b) gb = sum(g2, {0});
    return TensorList{gx, gw, gb};
  });
  return out;
}

}  // namespace qgrad
