// Per-block scales from amax grids, kernel calls and the clipped-STE backward node.
#include "quant/nvidia/quant_apply.h"

#include <cmath>

#include "core/autograd/function.h"
#include "core/factory.h"
#include "quant/nvidia/tensor_quant_cpu.h"

namespace qgrad::nvidia {

namespace {

Tensor like_grid(const BlockLayout& L, DType dtype) {
  return empty(L.grid_shape, TensorOptions().dtype(dtype));
}

}  // namespace

Tensor apply_int_quant(const Tensor& xc, const BlockLayout& L, const Tensor& amax,
                       const IntRange& range, bool fake, Tensor* scale_out) {
  Tensor sq = like_grid(L, xc.dtype()), sd = like_grid(L, xc.dtype());
  QGRAD_DISPATCH_FLOAT(xc.dtype(), "tensor_quant", [&] {
    using T = scalar_t;
    const T* a = amax.data_ptr<T>();
    T* q = sq.data_ptr<T>();
    T* d = sd.data_ptr<T>();
    const T bound = static_cast<T>(range.max_bound);
    const T eps = static_cast<T>(kMinAmax);
    for (std::int64_t g = 0; g < L.grid_numel; ++g) {
      const T s = bound / a[g];
      const bool zero = a[g] <= eps;
      q[g] = zero ? T(0) : s;
      d[g] = zero ? T(1) : s;
    }
  });
  Tensor out = empty(xc.shape(), TensorOptions().dtype(xc.dtype()));
  if (xc.numel() > 0) int_quant_cpu(xc, out, L, sq, sd, range.min_bound, range.max_bound, fake);
  if (scale_out) *scale_out = sd;
  return out;
}

Tensor apply_scaled_minifloat(const Tensor& xc, const BlockLayout& L, const Tensor& amax,
                              const MiniFloatSpec& fmt, bool fake, Tensor* scale_out) {
  Tensor s = like_grid(L, xc.dtype()), d = like_grid(L, xc.dtype());
  QGRAD_DISPATCH_FLOAT(xc.dtype(), "scaled_e4m3", [&] {
    using T = scalar_t;
    T* ps = s.data_ptr<T>();
    T* pd = d.data_ptr<T>();
    const T maxval = static_cast<T>(fmt.max_value);
    const T eps = static_cast<T>(kMinAmax);
    if (!amax.defined()) {
      for (std::int64_t g = 0; g < L.grid_numel; ++g) ps[g] = pd[g] = T(1);
      return;
    }
    const T* a = amax.data_ptr<T>();
    for (std::int64_t g = 0; g < L.grid_numel; ++g) {
      const T sc = maxval / a[g];
      const bool zero = a[g] <= eps;
      ps[g] = zero ? T(0) : sc;
      pd[g] = zero ? T(1) : sc;
    }
  });
  Tensor out = empty(xc.shape(), TensorOptions().dtype(xc.dtype()));
  if (xc.numel() > 0) fp_scaled_quant_cpu(xc, out, L, s, d, fmt, amax.defined(), fake);
  if (scale_out) *scale_out = d;
  return out;
}

Tensor apply_divmul_minifloat(const Tensor& xc, const BlockLayout& L, const Tensor& s,
                              const MiniFloatSpec& fmt, bool fake) {
  Tensor out = empty(xc.shape(), TensorOptions().dtype(xc.dtype()));
  if (xc.numel() > 0) fp_divmul_quant_cpu(xc, out, L, s, fmt, fake);
  return out;
}

Tensor block_absmax(const Tensor& xc, const BlockLayout& L, bool* nonfinite) {
  Tensor grid = zeros(L.grid_shape, TensorOptions().dtype(xc.dtype()));
  bool bad = false;
  if (xc.numel() > 0) bad = block_absmax_cpu(xc, L, grid);
  if (nonfinite) *nonfinite = bad;
  return grid;
}

void record_clip_ste(const std::string& name, const TensorList& inputs, Tensor& out,
                     const Tensor& xc, const BlockLayout& L, const Tensor& amax_eff) {
  if (!needs_grad(inputs)) return;
  SavedTensor sx(xc);
  const Tensor am = amax_eff.detach();
  const std::size_t n_inputs = inputs.size();
  record(name, inputs, {&out}, [sx, am, L, n_inputs](const TensorList& g) {
    Tensor x = sx.get();
    Tensor dy = g[0].contiguous();
    Tensor gx = empty(x.shape(), TensorOptions().dtype(x.dtype()));
    if (x.numel() > 0) clip_ste_backward_cpu(dy, x, gx, L, am);
    TensorList grads(n_inputs);
    grads[0] = gx;
    return grads;
  });
}

Tensor checked_amax_copy(const char* op, const Tensor& amax, DType dtype) {
  Tensor a = amax.detach().to(dtype).contiguous().clone();
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

}  // namespace qgrad::nvidia
