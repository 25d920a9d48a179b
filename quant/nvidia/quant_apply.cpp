// Per-block scales from amax grids, kernel calls through the "nvidia.*" tables and the clipped-STE
// backward node.
#include "quant/nvidia/quant_apply.h"

#include <cmath>

#include "core/autograd/function.h"
#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "ops/binary/binary.h"
#include "ops/where/where.h"
#include "quant/nvidia/tensor_quant_kernels.h"
#include "quant/parameter_check_kernels.h"

namespace qgrad::nvidia {

namespace {

// Grids and outputs live on the input's device, where its kernels run.
TensorOptions options_of(const Tensor& t) {
  return TensorOptions().dtype(t.dtype()).device(t.device());
}

// s and d of an amax grid (see AmaxScalesKernel).
void amax_scales(const char* op, const Tensor& amax, double bound, const Tensor& s,
                 const Tensor& d) {
  static const KernelTable<AmaxScalesKernel>& table = kernel_table(kAmaxScalesKernels);
  table(op, amax)(amax, bound, s, d);
}

}  // namespace

Tensor apply_int_quant(const char* op, const Tensor& xc, const BlockLayout& L, const Tensor& amax,
                       const IntRange& range, bool fake, Tensor* scale_out) {
  static const KernelTable<IntQuantKernel>& table = kernel_table(kIntQuantKernels);
  IntQuantKernel& kernel = table(op, xc);
  Tensor sq = empty(L.grid_shape, options_of(xc)), sd = empty(L.grid_shape, options_of(xc));
  amax_scales(op, amax, range.max_bound, sq, sd);
  Tensor out = empty(xc.shape(), options_of(xc));
  if (xc.numel() > 0) kernel(xc, out, L, sq, sd, range.min_bound, range.max_bound, fake);
  if (scale_out) *scale_out = sd;
  return out;
}

Tensor apply_scaled_minifloat(const char* op, const Tensor& xc, const BlockLayout& L,
                              const Tensor& amax, const MiniFloatSpec& fmt, bool fake,
                              Tensor* scale_out) {
  static const KernelTable<FpScaledQuantKernel>& table = kernel_table(kFpScaledQuantKernels);
  FpScaledQuantKernel& kernel = table(op, xc);
  Tensor s, d;
  if (amax.defined()) {
    // s = fl(fl(1 / amax) * maxval), as PyTorch evaluates the references' `448. / amax`; 0 for
    // the rounding and 1 for the division where amax <= 2^-24.
    NoGradGuard no_grad;
    const Tensor r = mul(div(1.0, amax), fmt.max_value);
    const Tensor tiny = le(amax, kMinAmax);
    s = where(tiny, 0.0, r).contiguous();
    d = where(tiny, 1.0, r).contiguous();
  } else {  // the plain cast
    s = full(L.grid_shape, 1.0, options_of(xc));
    d = full(L.grid_shape, 1.0, options_of(xc));
  }
  Tensor out = empty(xc.shape(), options_of(xc));
  if (xc.numel() > 0) kernel(xc, out, L, s, d, fmt, amax.defined(), fake);
  if (scale_out) *scale_out = d;
  return out;
}

Tensor apply_scaled_minifloat_with_scales(const char* op, const Tensor& xc, const BlockLayout& L,
                                          const Tensor& s, const Tensor& d,
                                          const MiniFloatSpec& fmt, bool zero_small, bool fake) {
  static const KernelTable<FpScaledQuantKernel>& table = kernel_table(kFpScaledQuantKernels);
  FpScaledQuantKernel& kernel = table(op, xc);
  Tensor out = empty(xc.shape(), options_of(xc));
  if (xc.numel() > 0) kernel(xc, out, L, s, d, fmt, zero_small, fake);
  return out;
}

Tensor apply_divmul_minifloat(const char* op, const Tensor& xc, const BlockLayout& L,
                              const Tensor& s, const MiniFloatSpec& fmt, bool fake) {
  static const KernelTable<FpDivmulQuantKernel>& table = kernel_table(kFpDivmulQuantKernels);
  FpDivmulQuantKernel& kernel = table(op, xc);
  Tensor out = empty(xc.shape(), options_of(xc));
  if (xc.numel() > 0) kernel(xc, out, L, s, fmt, fake);
  return out;
}

Tensor block_absmax(const char* op, const Tensor& xc, const BlockLayout& L, bool* nonfinite) {
  static const KernelTable<BlockAbsmaxKernel>& table = kernel_table(kBlockAbsmaxKernels);
  BlockAbsmaxKernel& kernel = table(op, xc);
  Tensor grid = zeros(L.grid_shape, options_of(xc));
  bool bad = false;
  if (xc.numel() > 0) bad = kernel(xc, L, grid);
  if (nonfinite) *nonfinite = bad;
  return grid;
}

void record_clip_ste(const std::string& name, const TensorList& inputs, Tensor& out,
                     const Tensor& xc, const BlockLayout& L, const Tensor& amax_eff) {
  if (!needs_grad(inputs)) return;
  SavedTensor sx(xc);
  const Tensor am = amax_eff.detach();
  const std::size_t n_inputs = inputs.size();
  record(name, inputs, {&out}, [name, sx, am, L, n_inputs](const TensorList& g) {
    static const KernelTable<ClipSteBackwardKernel>& table = kernel_table(kClipSteBackwardKernels);
    Tensor x = sx.get();
    Tensor dy = g[0].contiguous();
    Tensor gx = empty(x.shape(), options_of(x));
    if (x.numel() > 0) table(name.c_str(), x)(dy, x, gx, L, am);
    TensorList grads(n_inputs);
    grads[0] = gx;
    return grads;
  });
}

Tensor checked_amax_copy(const char* op, const Tensor& amax, DType dtype) {
  Tensor a = amax.detach().to(dtype).contiguous().clone();
  if (!a.device().is_cpu()) {
    // A kernel checks on the device: the host does not wait for amax in a training step.
    static const KernelTable<quant::CheckParameterKernel>& checks =
        kernel_table(quant::kCheckParameterKernels);
    checks(op, a)(op, CheckedParameter::Amax, ParameterRule::FiniteAndNonNegative, a);
    return a;
  }
  QGRAD_DISPATCH_FLOAT(dtype, op, [&] {
    const scalar_t* p = a.data_ptr<scalar_t>();
    for (std::int64_t i = 0; i < a.numel(); ++i) {
      QGRAD_CHECK(std::isfinite(p[i]) && p[i] >= 0, ValueError, op,
                  ": amax must be finite and >= 0, got ", p[i], " at flat index ", i,
                  " (amax shape ", a.shape(), ")");
    }
  });
  return a;
}

void check_unsigned_input(const char* op, const Tensor& xc) {
  if (!xc.device().is_cpu()) {
    static const KernelTable<quant::CheckParameterKernel>& checks =
        kernel_table(quant::kCheckParameterKernels);
    checks(op, xc)(op, CheckedParameter::UnsignedInput, ParameterRule::NonNegative, xc);
    return;
  }
  static const KernelTable<AnyNegativeKernel>& any_negative = kernel_table(kAnyNegativeKernels);
  QGRAD_CHECK(!any_negative(op, xc)(xc), ValueError, op,
              ": negative values encountered in unsigned quantization (input shape ", xc.shape(),
              ")");
}

}  // namespace qgrad::nvidia
