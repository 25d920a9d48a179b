// Reductions: axis handling, result shapes, device dispatch and backward rules.
#include "ops/reduce/reduce.h"

#include <algorithm>

#include "core/autograd/function.h"
#include "core/factory.h"
#include "ops/binary/binary.h"
#include "ops/device_check.h"
#include "ops/reduce/reduce_kernels.h"
#include "ops/where/where.h"

namespace qgrad {

namespace {

const KernelTable<ReduceKernel>& reduce_kernels() {
  static const KernelTable<ReduceKernel>& table = kernel_table(kReduceKernels);
  return table;
}

struct Axes {
  std::vector<bool> reduced;
  Shape out_shape;   // with keepdim applied
  Shape kept_shape;  // keepdim=true form (1 on reduced dims)
  std::int64_t count = 1;
};

Axes make_axes(const Tensor& x, const Shape& dims, bool keepdim, const char* op) {
  Axes a;
  const std::int64_t nd = x.dim();
  a.reduced.assign(static_cast<std::size_t>(nd), dims.empty());
  for (auto d : dims) {
    std::int64_t w = wrap_dim(d, nd, op);
    if (nd == 0) continue;
    QGRAD_CHECK(!a.reduced[w], ValueError, op, ": dim ", d, " appears more than once in ", dims);
    a.reduced[w] = true;
  }
  for (std::int64_t d = 0; d < nd; ++d) {
    if (a.reduced[d]) {
      a.count *= x.shape()[d];
      a.kept_shape.push_back(1);
      if (keepdim) a.out_shape.push_back(1);
    } else {
      a.kept_shape.push_back(x.shape()[d]);
      a.out_shape.push_back(x.shape()[d]);
    }
  }
  return a;
}

Tensor run(ReduceOp op, const Tensor& x, const Axes& axes, DType out_dtype, const char* name) {
  Tensor out = empty(axes.out_shape, TensorOptions().dtype(out_dtype).device(x.device()));
  reduce_kernels()(name, x)(op, x, axes.reduced, out, Tensor());
  return out;
}

DType sum_dtype(DType d) {
  return is_floating(d) ? d : kInt64;
}  // ints sum to int64, as torch

}  // namespace

Tensor sum(const Tensor& x, const Shape& dims, bool keepdim) {
  require_defined("sum", "input", x);
  Axes axes = make_axes(x, dims, keepdim, "sum");
  Tensor out = run(ReduceOp::Sum, x, axes, sum_dtype(x.dtype()), "sum");
  Shape in_shape = x.shape(), kept = axes.kept_shape;
  record("SumBackward", {x}, {&out}, [in_shape, kept](const TensorList& g) {
    return TensorList{g[0].reshape(kept).expand(in_shape)};
  });
  return out;
}

Tensor mean(const Tensor& x, const Shape& dims, bool keepdim) {
  require_floating("mean", "input", x);
  Axes axes = make_axes(x, dims, keepdim, "mean");
  Tensor s;
  {
    NoGradGuard ng;
    s = run(ReduceOp::Sum, x, axes, x.dtype(), "mean");
    s = div(s, static_cast<double>(axes.count));  // 0/0 = NaN for an empty reduction, as torch
  }
  Shape in_shape = x.shape(), kept = axes.kept_shape;
  const double n = static_cast<double>(axes.count);
  record("MeanBackward", {x}, {&s}, [in_shape, kept, n](const TensorList& g) {
    return TensorList{div(g[0], n).reshape(kept).expand(in_shape)};
  });
  return s;
}

Tensor var(const Tensor& x, const Shape& dims, std::int64_t correction, bool keepdim) {
  require_floating("var", "input", x);
  QGRAD_CHECK(correction >= 0, ValueError, "var: correction must be >= 0, got ", correction);
  Axes axes = make_axes(x, dims, keepdim, "var");
  Tensor out = empty(axes.out_shape, TensorOptions().dtype(x.dtype()).device(x.device()));
  static const KernelTable<VarKernel>& var_kernels = kernel_table(kVarKernels);
  var_kernels("var", x)(x, axes.reduced, correction, out);
  if (!needs_grad({x})) return out;
  // d var / dx = 2 (x - mean) / max(0, N - correction).
  SavedTensor sx(x);
  Shape kept = axes.kept_shape, rdims;
  for (std::int64_t d = 0; d < x.dim(); ++d)
    if (axes.reduced[d]) rdims.push_back(d);
  const double denom = static_cast<double>(std::max<std::int64_t>(0, axes.count - correction));
  record("VarBackward", {x}, {&out}, [=](const TensorList& g) {
    Tensor xv = sx.get();
    Tensor centred = sub(xv, mean(xv, rdims, /*keepdim=*/true));
    return TensorList{mul(centred, div(g[0].reshape(kept), denom / 2.0))};
  });
  return out;
}

namespace {

// amax/amin gradient: evenly shared among the elements equal to the result.
Tensor extreme(const Tensor& x, const Shape& dims, bool keepdim, bool is_max) {
  const char* name = is_max ? "amax" : "amin";
  require_defined(name, "input", x);
  Axes axes = make_axes(x, dims, keepdim, name);
  QGRAD_CHECK(axes.count > 0, ValueError, name,
              ": cannot reduce over a zero-size dimension (input shape ", x.shape(), ")");
  Tensor out = run(is_max ? ReduceOp::Max : ReduceOp::Min, x, axes, x.dtype(), name);
  SavedTensor sx(x), so(out);
  Shape in_shape = x.shape(), kept = axes.kept_shape, rdims;
  for (std::int64_t d = 0; d < x.dim(); ++d)
    if (axes.reduced[d]) rdims.push_back(d);
  record(is_max ? "AmaxBackward" : "AminBackward", {x}, {&out}, [=](const TensorList& g) {
    Tensor mask = eq(sx.get(), so.get().reshape(kept)).to(g[0].dtype());
    Tensor count = sum(mask, rdims, true);
    return TensorList{mul(div(g[0].reshape(kept), count), mask)};
  });
  return out;
}

std::pair<Tensor, Tensor> extreme_dim(const Tensor& x, std::int64_t dim, bool keepdim,
                                      bool is_max) {
  const char* name = is_max ? "max" : "min";
  require_defined(name, "input", x);
  const std::int64_t d = wrap_dim(dim, x.dim(), name);
  Axes axes = make_axes(x, {d}, keepdim, name);
  QGRAD_CHECK(axes.count > 0, ValueError, name, ": cannot reduce over dimension ", d,
              " of size 0 (input shape ", x.shape(), ")");
  Tensor values = empty(axes.out_shape, TensorOptions().dtype(x.dtype()).device(x.device()));
  Tensor idx = empty(axes.out_shape, TensorOptions().dtype(kInt64).device(x.device()));
  reduce_kernels()(name, x)(is_max ? ReduceOp::ArgMax : ReduceOp::ArgMin, x, axes.reduced, idx,
                            values);
  SavedTensor si(idx);
  Shape in_shape = x.shape(), kept = axes.kept_shape;
  const std::int64_t dd = x.dim() == 0 ? 0 : d;
  record(is_max ? "MaxBackward" : "MinBackward", {x}, {&values}, [=](const TensorList& g) {
    if (in_shape.empty()) return TensorList{g[0]};
    // One-hot along `dd`: positions equal to the chosen index.
    Shape iota_shape(in_shape.size(), 1);
    iota_shape[dd] = in_shape[dd];
    Tensor iota = arange(static_cast<double>(in_shape[dd]),
                         TensorOptions().dtype(kInt64).device(g[0].device()))
                      .reshape(iota_shape);
    Tensor onehot = eq(iota, si.get().reshape(kept));
    Tensor gz = zeros({}, TensorOptions().dtype(g[0].dtype()).device(g[0].device()));
    return TensorList{where(onehot, g[0].reshape(kept), gz)};
  });
  return {values, idx};
}

Tensor arg(const Tensor& x, std::optional<std::int64_t> dim, bool keepdim, bool is_max) {
  const char* name = is_max ? "argmax" : "argmin";
  require_defined(name, "input", x);
  QGRAD_CHECK(x.numel() > 0, ValueError, name, ": expected a non-empty tensor, got shape ",
              x.shape());
  const ReduceOp op = is_max ? ReduceOp::ArgMax : ReduceOp::ArgMin;
  if (!dim) {
    Tensor flat = x.detach().reshape({x.numel()});
    Axes axes = make_axes(flat, {0}, false, name);
    Tensor out = run(op, flat, axes, kInt64, name);
    if (keepdim) out = out.reshape(Shape(static_cast<std::size_t>(x.dim()), 1));
    return out;
  }
  Axes axes = make_axes(x, {wrap_dim(*dim, x.dim(), name)}, keepdim, name);
  return run(op, x, axes, kInt64, name);
}

}  // namespace

Tensor amax(const Tensor& x, const Shape& dims, bool keepdim) {
  return extreme(x, dims, keepdim, true);
}
Tensor amin(const Tensor& x, const Shape& dims, bool keepdim) {
  return extreme(x, dims, keepdim, false);
}
std::pair<Tensor, Tensor> max(const Tensor& x, std::int64_t dim, bool keepdim) {
  return extreme_dim(x, dim, keepdim, true);
}
std::pair<Tensor, Tensor> min(const Tensor& x, std::int64_t dim, bool keepdim) {
  return extreme_dim(x, dim, keepdim, false);
}
Tensor argmax(const Tensor& x, std::optional<std::int64_t> dim, bool keepdim) {
  return arg(x, dim, keepdim, true);
}
Tensor argmin(const Tensor& x, std::optional<std::int64_t> dim, bool keepdim) {
  return arg(x, dim, keepdim, false);
}

}  // namespace qgrad
