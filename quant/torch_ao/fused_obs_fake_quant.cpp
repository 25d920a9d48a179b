// torch.ao's fused observer + fake quantization: argument checks, the running state moved
// between the caller's tensors and the "torch_ao.fused_moving_avg_obs_fake_quant" kernel, and the
// masked straight-through backward.
#include "quant/torch_ao/fused_obs_fake_quant.h"

#include <cmath>
#include <limits>

#include "core/autograd/function.h"
#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "ops/binary/binary.h"
#include "ops/device_check.h"
#include "quant/torch_ao/fake_quantize_kernels.h"
#include "quant/torch_ao/fused_obs_fake_quant_kernels.h"
#include "quant/torch_ao/qparam_checks.h"

namespace qgrad::ao {

namespace {

const char* kOp = "fused_moving_avg_obs_fake_quant";

// A flag as the kernel reads it: int64 [1] on `device` (the caller's own tensor when it is one).
Tensor flag_tensor(const char* arg, const Tensor& t, Device device) {
  require_defined(kOp, arg, t);
  QGRAD_CHECK(t.numel() == 1, ShapeError, kOp, ": ", arg, " must hold one element, got shape ",
              t.shape());
  NoGradGuard no_grad;
  const Tensor f = t.detach().reshape({1});
  if (f.device() == device && f.dtype() == kInt64) return f;
  // Any value other than 0 is on, as item() != 0 reads it.
  return ne(f.to(device).to(kFloat64), 0.0).to(kInt64);
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

// The tensor the kernel updates in place for the state tensor t: t itself when it is contiguous
// and of the kernel's dtype, else a converted copy that put_back() copies into t afterwards.
Tensor working(const Tensor& t, DType dtype) {
  if (t.is_contiguous() && t.dtype() == dtype) return t;
  NoGradGuard no_grad;
  return t.detach().to(dtype).contiguous();
}
// After the kernel: t takes the copy's values, or records that the kernel wrote it in place.
void put_back(const Tensor& t, const Tensor& work) {
  if (work.impl() == t.impl()) {
    t.bump_version();
    return;
  }
  NoGradGuard no_grad;
  Tensor d = t;
  d.copy_(work.reshape(t.shape()));
}

// True when `g` is the only handle on its whole, contiguous buffer (as AccumulateGrad checks
// before taking over a gradient) and needs no gradient itself, so it may be written in place.
bool sole_owner(const Tensor& g) {
  return g.impl_ptr().use_count() == 1 && g.impl()->storage.use_count() == 1 &&
         !g.requires_grad() && g.is_contiguous() && g.storage_offset() == 0 &&
         static_cast<std::size_t>(g.numel()) * g.element_size() == g.impl()->storage->nbytes();
}

void check_state(const char* arg, const Tensor& t, std::int64_t n, bool allow_empty,
                 Device device) {
  require_defined(kOp, arg, t);
  QGRAD_CHECK(t.device() == device, DeviceError, kOp, ": ", arg, " must be on the input's device (",
              device, "), got ", t.device());
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
  const Device device = x.device();
  const bool on_host = device.is_cpu();
  const Tensor observe_flag = flag_tensor("observer_on", observer_on, device);
  const Tensor fake_quant_flag = flag_tensor("fake_quant_on", fake_quant_on, device);
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
    check_state("running_min", running_min, n, true, device);
    check_state("running_max", running_max, n, true, device);
    QGRAD_CHECK(running_min.numel() == running_max.numel(), ShapeError, kOp,
                ": running_min and running_max must have the same size");
    if (running_min.numel() == 0) {
      const float inf = std::numeric_limits<float>::infinity();
      const TensorOptions f32 = TensorOptions().dtype(kFloat32).device(device);
      assign(running_min, full({n}, inf, f32));
      assign(running_max, full({n}, -inf, f32));
      // PyTorch leaves the new elements uninitialised; qgrad uses 1 and 0.
      if (scale.numel() != n) assign(scale, ones({n}, f32));
      if (zero_point.numel() != n)
        assign(zero_point, zeros({n}, TensorOptions().dtype(kInt32).device(device)));
    }
  } else {
    check_state("running_min", running_min, 1, false, device);
    check_state("running_max", running_max, 1, false, device);
  }
  check_state("scale", scale, n, false, device);
  check_state("zero_point", zero_point, n, false, device);
  // A float64 scale would come back changed from the kernel's float32 copy even when the op does
  // not fake quantize, which only the GPU's flags (unread by the host) could say.
  QGRAD_CHECK(on_host || scale.dtype() == kFloat32, DTypeError, kOp,
              ": scale must be float32 on a GPU, got ", dtype_name(scale.dtype()));

  FusedObsFakeQuantParams p;
  p.per_channel = per_row_fake_quant;
  p.symmetric = symmetric_quant;
  p.averaging_const = static_cast<float>(averaging_const);
  p.quant_min = static_cast<std::int32_t>(quant_min);
  p.quant_max = static_cast<std::int32_t>(quant_max);
  FusedObsFakeQuantState st;
  st.observer_on = observe_flag;
  st.fake_quant_on = fake_quant_flag;
  st.running_min = working(running_min, kFloat32);
  st.running_max = working(running_max, kFloat32);
  st.scale = working(scale, kFloat32);
  st.zero_point = working(zero_point, kInt32);
  // The host reads the flags only where they are host memory; on a GPU every call fake quantizes
  // as far as the host can tell (a mask and its backward), the kernel copying x and setting the
  // mask when the flag is off.
  const bool fake_quant = !on_host || *st.fake_quant_on.data_ptr<std::int64_t>() != 0;

  const bool grad = needs_grad({x});
  const Tensor xc = x.detach().contiguous();
  const TensorOptions u8 = TensorOptions().dtype(kUInt8).device(device);
  Tensor y = empty(x.shape(), TensorOptions().dtype(kFloat32).device(device));
  // Per tensor the mask is packed bits (the kernel's contract), per channel one byte each.
  Tensor mask;
  if (grad && fake_quant)
    mask = per_row_fake_quant ? empty(x.shape(), u8) : empty({(x.numel() + 7) / 8}, u8);
  auto put_back_stats = [&] {
    put_back(running_min, st.running_min);
    put_back(running_max, st.running_max);
  };
  try {
    kernel(xc, p, st, y, mask);
  } catch (const ValueError&) {
    put_back_stats();  // PyTorch has updated the statistics before its check fails
    throw;
  }
  put_back_stats();
  if (fake_quant) {
    put_back(scale, st.scale);
    put_back(zero_point, st.zero_point);
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
            sole_owner(dy)
                ? dy
                : empty(dy.shape(), TensorOptions().dtype(dy.dtype()).device(dy.device()));
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
