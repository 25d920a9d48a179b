// Losses: argument checks (shapes, dtypes, target ranges), reduction, and the backward rules
// next to the forwards. cross_entropy and nll_loss share one implementation over the
// [N, C, S...] layout; an unbatched [C] input is handled as a batch of one.
#include "ops/loss/loss.h"

#include "core/autograd/function.h"
#include "core/factory.h"
#include "ops/binary/binary.h"
#include "ops/device_check.h"
#include "ops/loss/loss_kernels.h"

namespace qgrad {

namespace {

struct ClassLossArgs {
  const char* name;
  Tensor weight;
  std::int64_t ignore_index;
  std::string reduction;
  double label_smoothing;
  bool from_logits;
};

// Every target must be a class in [0, C) or ignore_index. On the CPU: checked here, before the
// (parallel) kernel. On a GPU the kernels check them (reading them here would make the host wait
// for the GPU in every step): a bad target gives NaN and an IndexError at the next wait for the
// GPU (core/cuda_deferred_error.h), not PyTorch's device-side assert, which ends the CUDA context.
void check_targets(const char* name, const Tensor& target, std::int64_t C,
                   std::int64_t ignore_index) {
  if (!target.device().is_cpu()) return;
  const std::int64_t* t = target.data_ptr<std::int64_t>();
  const std::int64_t n = target.numel();
  for (std::int64_t i = 0; i < n; ++i) {
    QGRAD_CHECK(t[i] == ignore_index || (t[i] >= 0 && t[i] < C), IndexError, name,
                ": target value ", t[i], " (at flat position ", i, ") is out of range for ", C,
                " classes: expected 0 <= target < ", C, " or ignore_index (", ignore_index, ")");
  }
}

Tensor class_loss(const Tensor& input, const Tensor& target, const ClassLossArgs& a) {
  const char* name = a.name;
  require_floating(name, "input", input);
  require_defined(name, "target", target);
  check_same_device(name, input, target);
  QGRAD_CHECK(target.dtype() == kInt64, DTypeError, name,
              ": argument 'target' must hold int64 class indices, got ", dtype_name(target.dtype()),
              " (shape ", target.shape(), ")");
  const Reduction red = parse_reduction(a.reduction, name);
  QGRAD_CHECK(a.label_smoothing >= 0.0 && a.label_smoothing <= 1.0, ValueError, name,
              ": label_smoothing must be in [0, 1], got ", a.label_smoothing);
  QGRAD_CHECK(input.dim() >= 1, ShapeError, name,
              ": input must be [C], [N, C] or [N, C, d1, ...], got a 0-d tensor");

  // Batched geometry: x is [N, C, d1, ...]; the target must be [N, d1, ...].
  const bool unbatched = input.dim() == 1;
  Tensor x = unbatched ? input.detach().unsqueeze(0) : input.detach();
  Shape want;
  for (std::int64_t d = 0; d < input.dim(); ++d)
    if (d != (unbatched ? 0 : 1)) want.push_back(input.shape()[d]);
  QGRAD_CHECK(target.shape() == want, ShapeError, name, ": target shape ", target.shape(),
              " does not match input shape ", input.shape(), " (expected target shape ", want, ")");
  const std::int64_t C = x.shape()[1];

  Tensor weight;
  if (a.weight.defined()) {
    require_floating(name, "weight", a.weight);
    check_same_device(name, input, a.weight);
    QGRAD_CHECK(a.weight.shape() == Shape{C}, ShapeError, name, ": weight must have shape [", C,
                "] (one value per class), got ", a.weight.shape());
    QGRAD_CHECK(!needs_grad({a.weight}), ValueError, name,
                ": the gradient with respect to 'weight' is not supported (as in PyTorch); pass "
                "weight.detach()");
    weight = a.weight.detach().to(input.dtype()).contiguous();
  }

  // The kernel lookup (a DeviceError for a device without one) comes before check_targets.
  static const KernelTable<ClassLossKernel>& forward = kernel_table(kClassLossKernels);
  ClassLossKernel& kernel = forward(name, input);
  const Tensor tgt = target.detach().contiguous();
  check_targets(name, tgt, C, a.ignore_index);

  ClassLossParams p;
  p.ignore_index = a.ignore_index;
  p.label_smoothing = a.label_smoothing;
  p.from_logits = a.from_logits;
  const TensorOptions f64 = TensorOptions().dtype(kFloat64).device(input.device());
  const std::int64_t P = tgt.numel();
  Tensor losses = empty({P}, f64);
  Tensor lse = a.from_logits ? empty({P}, f64) : Tensor();
  Tensor totals = empty({2}, f64);  // loss sum, weight sum: they stay on the input's device
  kernel(x, tgt, weight, p, losses, lse, totals);

  const TensorOptions out_opts = TensorOptions().dtype(input.dtype()).device(input.device());
  // A float64 0-d result of its own (not a view of totals), cast to the input's dtype.
  auto result = [&](const Tensor& v) {
    return v.dtype() == input.dtype() ? v.clone() : v.to(input.dtype());
  };
  Tensor out;
  Tensor factor;  // the backward's scale (undefined: 1)
  switch (red) {
    case Reduction::None:
      out = losses.to(input.dtype()).view(target.shape());
      break;
    case Reduction::Sum:
      out = result(totals.select(0, 0));
      break;
    case Reduction::Mean: {
      // 0 / 0 = NaN when every target is ignored, as PyTorch.
      const Tensor weight_sum = totals.select(0, 1);
      out = result(div(totals.select(0, 0), weight_sum));
      factor = div(1.0, weight_sum);
      break;
    }
  }

  SavedTensor sx(x), st(tgt), sw(weight);
  const Shape in_shape = input.shape(), x_shape = x.shape();
  const std::string backward_name = a.from_logits ? "CrossEntropyBackward" : "NllLossBackward";
  const bool from_logits = a.from_logits;
  record(backward_name, {input}, {&out}, [=](const TensorList& g) {
    Tensor xs = sx.get();
    // nll writes only the target entries; cross entropy writes every entry.
    Tensor gx = from_logits ? empty(x_shape, out_opts) : zeros(x_shape, out_opts);
    // The kernel reads g as a contiguous array (one value per position, or one shared value).
    Tensor gc = g[0].to(xs.dtype()).contiguous();
    static const KernelTable<ClassLossBackwardKernel>& backward =
        kernel_table(kClassLossBackwardKernels);
    backward(name, gc)(xs, st.get(), sw.get(), lse, p, gc, factor, gx);
    return TensorList{gx.view(in_shape)};
  });
  return out;
}

}  // namespace

Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyOptions& o) {
  return class_loss(
      input, target,
      {"cross_entropy", o.weight_, o.ignore_index_, o.reduction_, o.label_smoothing_, true});
}

Tensor nll_loss(const Tensor& input, const Tensor& target, const NllLossOptions& o) {
  return class_loss(input, target,
                    {"nll_loss", o.weight_, o.ignore_index_, o.reduction_, 0.0, false});
}

Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  const char* name = "mse_loss";
  require_floating(name, "input", input);
  require_floating(name, "target", target);
  check_same_device(name, input, target);
  const Reduction red = parse_reduction(reduction, name);
  QGRAD_CHECK(input.shape() == target.shape(), ShapeError, name, ": input shape ", input.shape(),
              " and target shape ", target.shape(),
              " differ; mse_loss does not broadcast (expand the target explicitly if intended)");
  // Mixed float32/float64: compute in the wider type (the conversions are differentiable).
  const DType dt = promote_types(input.dtype(), target.dtype());
  const Tensor a = input.dtype() == dt ? input : input.to(dt);
  const Tensor b = target.dtype() == dt ? target : target.to(dt);
  const TensorOptions opts = TensorOptions().dtype(dt).device(a.device());

  static const KernelTable<MseLossKernel>& forward = kernel_table(kMseLossKernels);
  Tensor out;
  double factor = 2.0;
  if (red == Reduction::None) {
    out = empty(a.shape(), opts);
    forward(name, a)(a.detach(), b.detach(), out, Tensor());
  } else {
    // The sum stays on the device (float64), and so does the result.
    const Tensor total = empty({}, TensorOptions().dtype(kFloat64).device(a.device()));
    forward(name, a)(a.detach(), b.detach(), Tensor(), total);
    const double n = static_cast<double>(a.numel());
    const Tensor v = red == Reduction::Mean ? div(total, n) : total;  // mean of nothing is NaN
    out = v.to(dt);
    if (red == Reduction::Mean) factor = 2.0 / n;
  }
  SavedTensor sa(a), sb(b);
  const bool need_a = needs_grad({a}), need_b = needs_grad({b});
  record("MseLossBackward", {a, b}, {&out}, [=](const TensorList& g) {
    Tensor av = sa.get(), bv = sb.get();
    static const KernelTable<MseLossBackwardKernel>& backward =
        kernel_table(kMseLossBackwardKernels);
    MseLossBackwardKernel& kernel = backward(name, g[0]);
    const Tensor gfull = g[0].expand(av.shape());
    const TensorOptions o = TensorOptions().dtype(av.dtype()).device(av.device());
    Tensor ga, gb;
    if (need_a) {
      ga = empty(av.shape(), o);
      kernel(av, bv, gfull, factor, ga);
    }
    if (need_b) {
      gb = empty(av.shape(), o);
      kernel(bv, av, gfull, factor, gb);  // d/db (a - b)^2 = 2 (b - a)
    }
    return TensorList{ga, gb};
  });
  return out;
}

}  // namespace qgrad
