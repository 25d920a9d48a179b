// torch.ao's fused observer + fake quantization: argument checks, the running state moved
// between the caller's tensors and the "torch_ao.fused_moving_avg_obs_fake_quant" kernel, and the
// masked straight-through backward.
#include "quant/torch_ao/fused_obs_fake_quant.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/autograd/function.h"
#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "ops/device_check.h"
#include "quant/torch_ao/fake_quantize_kernels.h"
#include "quant/torch_ao/fused_obs_fake_quant_kernels.h"
#include "quant/torch_ao/qparam_checks.h"

namespace qgrad::ao {

namespace {

const char* kOp = "fused_moving_avg_obs_fake_quant";

bool flag(const char* arg, const Tensor& t) {
  require_defined(kOp, arg, t);
  QGRAD_CHECK(t.numel() == 1, ShapeError, kOp, ": ", arg, " must hold one element, got shape ",
              t.shape());
  // A module's int64 flag on the CPU is read directly (item() goes through a conversion).
  if (t.device() == Device() && t.dtype() == kInt64)
    return *static_cast<const std::int64_t*>(t.raw_data()) != 0;
  return t.item<double>() != 0;
}

// dst (a caller's state tensor, possibly empty) takes `src`'s values and shape in place, so every
// handle on it (a module's registered buffer) sees them, as PyTorch's in-place resize_ does.
void assign(const Tensor& dst, const Tensor& src) {
  NoGradGuard no_grad;
  if (dst.numel() == src.numel()) {
    Tensor d = dst;
    d.copy_(src.reshape(dst.shape()));
    return;
  }
  const Tensor copy = src.to(dst.dtype()).contiguous().clone();
  TensorImpl* d = dst.impl();
  const TensorImpl* s = copy.impl();
  d->storage = s->storage;
  d->offset = s->offset;
  d->shape = s->shape;
  d->strides = s->strides;
}

// dst takes the values v, laid out in `shape` (assign above). The common case, a contiguous CPU
// tensor of T's dtype and v's size, is a memcpy and a version bump, as copy_ does, without a
// temporary tensor.
template <typename T>
void write_state(const Tensor& dst, const std::vector<T>& v, const Shape& shape) {
  if (dst.device() == Device() && dst.dtype() == dtype_of<T>::value && dst.is_contiguous() &&
      dst.numel() == static_cast<std::int64_t>(v.size())) {
    if (!v.empty()) std::memcpy(dst.raw_data(), v.data(), v.size() * sizeof(T));
    dst.bump_version();
    return;
  }
  assign(dst, from_vector<T>(v, shape, TensorOptions().dtype(dtype_of<T>::value)));
}

// True when `g` is the only handle on its whole, contiguous buffer (as AccumulateGrad checks
// before taking over a gradient) and needs no gradient itself, so it may be written in place.
bool sole_owner(const Tensor& g) {
  return g.impl_ptr().use_count() == 1 && g.impl()->storage.use_count() == 1 &&
         !g.requires_grad() && g.is_contiguous() && g.storage_offset() == 0 &&
         static_cast<std::size_t>(g.numel()) * g.element_size() == g.impl()->storage->nbytes();
}

void check_state(const char* arg, const Tensor& t, std::int64_t n, bool allow_empty) {
  require_defined(kOp, arg, t);
  QGRAD_CHECK(t.device() == Device(), DeviceError, kOp, ": ", arg,
              " must be on the CPU (the running state is host state)");
  QGRAD_CHECK(t.numel() == n || (allow_empty && t.numel() == 0), ShapeError, kOp, ": ", arg,
              " must hold ", n, n == 1 ? " element" : " elements (one per channel of axis 0)",
              allow_empty ? " or be empty" : "", ", got shape ", t.shape());
}

}  // namespace

Tensor fused_moving_avg_obs_fake_quant(const Tensor& x, const Tensor& observer_on,
                                       const Tensor& fake_quant_on, const Tensor& running_min,
                                       const Tensor& running_max, const Tensor& scale,
                                       const Tensor& zero_point, double averaging_const,
                                       std::int64_t quant_min, std::int64_t quant_max,
                                       std::int64_t ch_axis, bool per_row_fake_quant,
                                       bool symmetric_quant) {
  static const KernelTable<FusedObsFakeQuantKernel>& table =
      kernel_table(kFusedObsFakeQuantKernels);
  require_floating(kOp, "input", x);
  QGRAD_CHECK(x.dtype() == kFloat32, DTypeError, kOp, ": input must be float32, got ",
              dtype_name(x.dtype()));
  FusedObsFakeQuantKernel& kernel = table(kOp, x);
  check_quant_range(kOp, quant_min, quant_max);
  constexpr std::int64_t kLimit = std::int64_t{1} << 23;
  QGRAD_CHECK(quant_min >= -kLimit && quant_max <= kLimit, ValueError, kOp, ": quant_min (",
              quant_min, ") and quant_max (", quant_max, ") must lie in [-2^23, 2^23]");
  QGRAD_CHECK(std::isfinite(averaging_const), ValueError, kOp,
              ": averaging_const must be finite, got ", averaging_const);
  const bool observe = flag("observer_on", observer_on);
  const bool fake_quant = flag("fake_quant_on", fake_quant_on);
  QGRAD_CHECK(ch_axis < x.dim(), IndexError, kOp, ": ch_axis (", ch_axis,
              ") must be < the input's dim (", x.dim(), ")");
  require_floating(kOp, "running_min", running_min);
  require_floating(kOp, "running_max", running_max);
  require_floating(kOp, "scale", scale);
  require_defined(kOp, "zero_point", zero_point);
  QGRAD_CHECK(zero_point.dtype() == kInt32 || zero_point.dtype() == kInt64, DTypeError, kOp,
              ": zero_point must be int32 or int64, got ", dtype_name(zero_point.dtype()));
  if (x.numel() == 0) return x.detach().clone();

  std::int64_t n = 1;
  if (per_row_fake_quant) {
    QGRAD_CHECK(ch_axis == 0, ValueError, kOp,
                ": per-channel fake quantization is only supported on axis 0 (as in PyTorch "
                "1.13), got ch_axis ",
                ch_axis);
    n = x.size(0);
    check_state("running_min", running_min, n, true);
    check_state("running_max", running_max, n, true);
    QGRAD_CHECK(running_min.numel() == running_max.numel(), ShapeError, kOp,
                ": running_min and running_max must have the same size");
    if (running_min.numel() == 0) {
      const float inf = std::numeric_limits<float>::infinity();
      assign(running_min, full({n}, inf, TensorOptions().dtype(kFloat32)));
      assign(running_max, full({n}, -inf, TensorOptions().dtype(kFloat32)));
      // PyTorch leaves the new elements uninitialised; qgrad uses 1 and 0.
      if (scale.numel() != n) assign(scale, ones({n}, TensorOptions().dtype(kFloat32)));
      if (zero_point.numel() != n) assign(zero_point, zeros({n}, TensorOptions().dtype(kInt32)));
    }
  } else {
    check_state("running_min", running_min, 1, false);
    check_state("running_max", running_max, 1, false);
  }
  check_state("scale", scale, n, false);
  check_state("zero_point", zero_point, n, false);

  FusedObsFakeQuantParams p;
  p.observe = observe;
  p.fake_quant = fake_quant;
  p.per_channel = per_row_fake_quant;
  p.symmetric = symmetric_quant;
  p.averaging_const = static_cast<float>(averaging_const);
  p.quant_min = static_cast<std::int32_t>(quant_min);
  p.quant_max = static_cast<std::int32_t>(quant_max);
  std::vector<float> rmin = running_min.to_vector<float>(), rmax = running_max.to_vector<float>();
  std::vector<float> s = scale.to_vector<float>();
  std::vector<std::int32_t> z = zero_point.to_vector<std::int32_t>();

  const bool grad = needs_grad({x});
  const Tensor xc = x.detach().contiguous();
  Tensor y = empty(x.shape(), TensorOptions().dtype(kFloat32));
  // Per tensor the mask is packed bits (the kernel's contract), per channel one byte each.
  const TensorOptions u8 = TensorOptions().dtype(kUInt8);
  Tensor mask;
  if (grad && fake_quant)
    mask = per_row_fake_quant ? empty(x.shape(), u8) : empty({(x.numel() + 7) / 8}, u8);
  const Shape state_shape = running_min.shape();
  auto write_stats = [&] {
    write_state<float>(running_min, rmin, state_shape);
    write_state<float>(running_max, rmax, state_shape);
  };
  try {
    kernel(xc, p, rmin, rmax, s, z, y, mask);
  } catch (const ValueError&) {
    write_stats();  // PyTorch has updated the statistics before its check fails
    throw;
  }
  write_stats();
  if (fake_quant) {
    write_state<float>(scale, s, scale.shape());
    write_state<std::int32_t>(zero_point, z, zero_point.shape());
  }
  if (grad) {
    if (fake_quant) {
      const bool packed = !per_row_fake_quant;
      record("FusedMovingAvgObsFakeQuantBackward", {x}, {&y}, [mask, packed](const TensorList& g) {
        static const KernelTable<MaskedGradientKernel>& mg = kernel_table(kMaskedGradientKernels);
        static const KernelTable<MaskedGradientBitsKernel>& mb =
            kernel_table(kMaskedGradientBitsKernels);
        // The mask is applied where the incoming gradient lies when nothing else can see that
        // buffer (the usual case: a fresh gradient from the layer above), so no new buffer is
        // written; otherwise into a new one.
        // References, not copies: an extra handle on g[0] would make sole_owner() false.
        Tensor contiguous;
        if (packed && !g[0].is_contiguous()) contiguous = g[0].contiguous();
        const Tensor& dy = contiguous.defined() ? contiguous : g[0];
        const Tensor dx =
            sole_owner(dy) ? dy : empty(dy.shape(), TensorOptions().dtype(dy.dtype()));
        if (packed)
          mb(kOp, dy)(dy, mask, dx);
        else
          mg(kOp, dy)(dy, mask, dx);
        return TensorList{dx};
      });
    } else {
      record("FusedMovingAvgObsFakeQuantBackward", {x}, {&y},
             [](const TensorList& g) { return TensorList{g[0].clone()}; });
    }
  }
  return y;
}

}  // namespace qgrad::ao
