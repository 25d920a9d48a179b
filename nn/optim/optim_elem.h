// The optimisers' element-wise updates, written once for both devices: a QGRAD_HD functor per
// optimiser that updates element i of a parameter and its state in place, each line mirroring one
// tensor op of torch 1.13's _single_tensor_sgd / _single_tensor_adam(w) with the scalars cast to
// the parameter dtype as ATen does (bias corrections in double from the integer step, as Python
// computes them). Driven by a device's for_each (cpu::Map, cuda::Map) through `update`.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"
#include "nn/optim/optim_kernels.h"

namespace qgrad::optim::optim_elem {

template <typename T>
struct SgdStep {
  T* p;
  const T* g;
  T* buf;  // null without momentum
  T wd, mom, one_minus_damp, neg_lr;
  bool use_wd, use_momentum, first, nesterov, maximize;

  QGRAD_HD void operator()(std::int64_t i) const {
    T d = maximize ? -g[i] : g[i];
    if (use_wd) d = d + wd * p[i];
    if (use_momentum) {
      T bv;
      if (first) {
        bv = d;
      } else {
        bv = buf[i] * mom;
        bv = bv + one_minus_damp * d;
      }
      buf[i] = bv;
      d = nesterov ? d + mom * bv : bv;
    }
    p[i] = p[i] + neg_lr * d;
  }
};

template <typename T>
struct AdamStep {
  T* p;
  const T* g;
  T* m;
  T* v;
  T* vmax;  // null without amsgrad
  T decay, wd, b1, one_minus_b1, b2, one_minus_b2, bc2_sqrt, eps, neg_step_size;
  bool coupled_wd, decoupled, amsgrad, maximize;

  QGRAD_HD void operator()(std::int64_t i) const {
    T grad = maximize ? -g[i] : g[i];
    T param = p[i];
    if (decoupled) param = param * decay;
    if (coupled_wd) grad = grad + wd * param;
    T mi = m[i] * b1;
    mi = mi + one_minus_b1 * grad;
    T vi = v[i] * b2;
    vi = vi + one_minus_b2 * grad * grad;
    m[i] = mi;
    v[i] = vi;
    T denom_src = vi;
    if (amsgrad) {
      denom_src = hd::max(vmax[i], vi);
      vmax[i] = denom_src;
    }
    T denom = std::sqrt(denom_src) / bc2_sqrt;
    denom = denom + eps;
    p[i] = param + neg_step_size * mi / denom;
  }
};

template <typename T>
T* data_or_null(const Tensor& t) {
  return t.defined() ? static_cast<T*>(t.raw_data()) : nullptr;
}

template <typename Map>
void sgd_update(const Tensor& p, const Tensor& g, const Tensor& buf, const SgdStepConfig& c,
                bool first) {
  QGRAD_DISPATCH_FLOAT(p.dtype(), "SGD::step", [&] {
    using T = scalar_t;
    const SgdStep<T> f{static_cast<T*>(p.raw_data()),
                       static_cast<const T*>(g.raw_data()),
                       data_or_null<T>(buf),
                       static_cast<T>(c.weight_decay),
                       static_cast<T>(c.momentum),
                       static_cast<T>(1 - c.dampening),
                       static_cast<T>(-c.lr),
                       c.weight_decay != 0,
                       c.momentum != 0,
                       first,
                       c.nesterov,
                       c.maximize};
    Map::for_each("SGD::step", p.device(), p.numel(), f);
  });
}

template <typename Map>
void adam_update(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v,
                 const Tensor& vmax, const AdamStepConfig& c, std::int64_t step) {
  const double s = static_cast<double>(step);
  const double bias_correction1 = 1 - std::pow(c.beta1, s);
  const double bias_correction2 = 1 - std::pow(c.beta2, s);
  const double step_size = c.lr / bias_correction1;
  QGRAD_DISPATCH_FLOAT(p.dtype(), "Adam::step", [&] {
    using T = scalar_t;
    const AdamStep<T> f{static_cast<T*>(p.raw_data()),
                        static_cast<const T*>(g.raw_data()),
                        static_cast<T*>(m.raw_data()),
                        static_cast<T*>(v.raw_data()),
                        data_or_null<T>(vmax),
                        static_cast<T>(1 - c.lr * c.weight_decay),
                        static_cast<T>(c.weight_decay),
                        static_cast<T>(c.beta1),
                        static_cast<T>(1 - c.beta1),
                        static_cast<T>(c.beta2),
                        static_cast<T>(1 - c.beta2),
                        static_cast<T>(std::sqrt(bias_correction2)),
                        static_cast<T>(c.eps),
                        static_cast<T>(-step_size),
                        !c.decoupled_weight_decay && c.weight_decay != 0,
                        c.decoupled_weight_decay,
                        c.amsgrad,
                        c.maximize};
    Map::for_each("Adam::step", p.device(), p.numel(), f);
  });
}

}  // namespace qgrad::optim::optim_elem
