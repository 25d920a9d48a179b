// CPU kernels of LSQ / LSQ+: one strided pass per direction; the step size (and offset) are read
// through zero strides when broadcast, and each element is lsq_elem.h's. Also the initialisation
// statistics, and the "learnable.lsq_*" table registration.
#include "quant/learnable/lsq_kernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "core/strided_loop.h"
#include "quant/learnable/lsq_elem.h"

namespace qgrad::learnable {

namespace {

template <typename T>
void forward(const Tensor& x, const Tensor& s, const Tensor& b, T lo, T hi, const Tensor& y) {
  const bool has_b = b.defined();
  const T* px = static_cast<const T*>(x.raw_data());
  const T* ps = static_cast<const T*>(s.raw_data());
  const T* pb = has_b ? static_cast<const T*>(b.raw_data()) : ps;
  T* py = static_cast<T*>(y.raw_data());
  StridedLoop<4> loop(y.shape(),
                      {y.strides(), x.strides(), s.strides(), has_b ? b.strides() : s.strides()},
                      {0, 0, 0, 0});
  loop.run([&](const std::array<std::int64_t, 4>& off, std::int64_t n,
               const std::array<std::int64_t, 4>& st) {
    // A local element: its bounds stay in registers (the output stores could alias captures).
    const LsqForwardElem<T> e{lo, hi, has_b};
    for (std::int64_t i = 0; i < n; ++i) {
      const T xv = px[off[1] + i * st[1]];
      const T sv = ps[off[2] + i * st[2]];
      const T bv = has_b ? pb[off[3] + i * st[3]] : T(0);
      py[off[0] + i * st[0]] = e(xv, sv, bv);
    }
  });
}

template <typename T>
void backward(const Tensor& dy, const Tensor& x, const Tensor& s, const Tensor& b, T lo, T hi, T g,
              const Tensor& dx, const Tensor& ds, const Tensor& db) {
  const bool has_b = b.defined();
  const T* pg = static_cast<const T*>(dy.raw_data());
  const T* px = static_cast<const T*>(x.raw_data());
  const T* ps = static_cast<const T*>(s.raw_data());
  const T* pb = has_b ? static_cast<const T*>(b.raw_data()) : ps;
  T* pdx = static_cast<T*>(dx.raw_data());
  T* pds = static_cast<T*>(ds.raw_data());
  T* pdb = has_b ? static_cast<T*>(db.raw_data()) : pds;
  StridedLoop<7> loop(dx.shape(),
                      {dx.strides(), ds.strides(), has_b ? db.strides() : ds.strides(),
                       dy.strides(), x.strides(), s.strides(), has_b ? b.strides() : s.strides()},
                      {0, 0, 0, 0, 0, 0, 0});
  loop.run([&](const std::array<std::int64_t, 7>& off, std::int64_t n,
               const std::array<std::int64_t, 7>& st) {
    const LsqBackwardElem<T> e{lo, hi, g, has_b};
    for (std::int64_t i = 0; i < n; ++i) {
      const T gv = pg[off[3] + i * st[3]];
      const T xv = px[off[4] + i * st[4]];
      const T sv = ps[off[5] + i * st[5]];
      const T bv = has_b ? pb[off[6] + i * st[6]] : T(0);
      T gs, gb;
      const T gx = e(gv, xv, sv, bv, gs, gb);
      pdx[off[0] + i * st[0]] = gx;
      pds[off[1] + i * st[1]] = gs;
      if (has_b) pdb[off[2] + i * st[2]] = gb;
    }
  });
}

void lsq_forward_cpu(const Tensor& x, const Tensor& s, const Tensor& beta, double lo, double hi,
                     const Tensor& y) {
  if (y.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(x.dtype(), "lsq_quantize", [&] {
    forward<scalar_t>(x, s, beta, static_cast<scalar_t>(lo), static_cast<scalar_t>(hi), y);
  });
}

void lsq_backward_cpu(const Tensor& dy, const Tensor& x, const Tensor& s, const Tensor& beta,
                      double lo, double hi, double grad_scale, const Tensor& dx, const Tensor& ds,
                      const Tensor& dbeta) {
  if (dx.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(x.dtype(), "lsq_quantize backward", [&] {
    backward<scalar_t>(dy, x, s, beta, static_cast<scalar_t>(lo), static_cast<scalar_t>(hi),
                       static_cast<scalar_t>(grad_scale), dx, ds, dbeta);
  });
}

double lsq_abs_sum_cpu(const Tensor& v) {
  double sum = 0;
  for (double e : v.to_vector<double>()) sum += std::fabs(e);
  return sum;
}

std::pair<double, double> lsq_minmax_cpu(const Tensor& x) {
  const std::vector<double> v = x.to_vector<double>();
  double lo = v[0], hi = v[0];
  for (double e : v) {
    lo = std::min(lo, e);
    hi = std::max(hi, e);
  }
  return {lo, hi};
}

}  // namespace

void register_lsq_cpu_kernels(KernelRegistry& r) {
  r.table(kLsqForwardKernels).define(DeviceType::CPU, &lsq_forward_cpu, kFloatingDTypes);
  r.table(kLsqBackwardKernels).define(DeviceType::CPU, &lsq_backward_cpu, kFloatingDTypes);
  r.table(kLsqAbsSumKernels).define(DeviceType::CPU, &lsq_abs_sum_cpu, kFloatingDTypes);
  r.table(kLsqMinMaxKernels).define(DeviceType::CPU, &lsq_minmax_cpu, kFloatingDTypes);
}

}  // namespace qgrad::learnable
