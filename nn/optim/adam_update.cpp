// Adam/AdamW element loop. Bias corrections are computed in double from the integer step as in
// Python; every tensor op then uses the scalars cast to the parameter dtype, in torch's order.
#include "nn/optim/adam_update.h"

#include <algorithm>
#include <cmath>

#include "core/factory.h"
#include "core/strided_loop.h"

namespace qgrad::optim {

namespace {

template <typename T>
void adam_kernel(T* p, const T* g, T* m, T* v, T* vmax, std::int64_t n, const AdamStepConfig& c,
                 std::int64_t step) {
  const double s = static_cast<double>(step);
  const double bias_correction1 = 1 - std::pow(c.beta1, s);
  const double bias_correction2 = 1 - std::pow(c.beta2, s);
  const double step_size = c.lr / bias_correction1;
  const double bias_correction2_sqrt = std::sqrt(bias_correction2);

  const T decay = static_cast<T>(1 - c.lr * c.weight_decay);
  const T wd = static_cast<T>(c.weight_decay);
  const T b1 = static_cast<T>(c.beta1), one_minus_b1 = static_cast<T>(1 - c.beta1);
  const T b2 = static_cast<T>(c.beta2), one_minus_b2 = static_cast<T>(1 - c.beta2);
  const T bc2_sqrt = static_cast<T>(bias_correction2_sqrt);
  const T eps = static_cast<T>(c.eps);
  const T neg_step_size = static_cast<T>(-step_size);
  const bool coupled_wd = !c.decoupled_weight_decay && c.weight_decay != 0;
  const bool decoupled = c.decoupled_weight_decay, amsgrad = c.amsgrad, maximize = c.maximize;

  parallel_for(n, kParallelGrain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
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
        denom_src = std::max(vmax[i], vi);
        vmax[i] = denom_src;
      }
      T denom = std::sqrt(denom_src) / bc2_sqrt;
      denom = denom + eps;
      p[i] = param + neg_step_size * mi / denom;
    }
  });
}

// Handles, not references: inserting into the dict may move its items.
Tensor state_tensor(TensorDict& state, const char* name, const Tensor& like) {
  if (Tensor* t = state.find(name)) return *t;
  return state.insert(name, zeros_like(like));
}

}  // namespace

void adam_update(const Tensor& p, const Tensor& g, TensorDict& state, const AdamStepConfig& cfg) {
  Tensor step_t = state.contains("step")
                      ? state.at("step")
                      : state.insert("step", scalar_tensor(0, TensorOptions().dtype(kInt64)));
  Tensor m = state_tensor(state, "exp_avg", p);
  Tensor v = state_tensor(state, "exp_avg_sq", p);
  Tensor vmax;
  if (cfg.amsgrad) vmax = state_tensor(state, "max_exp_avg_sq", p);
  const std::int64_t step = step_t.item<std::int64_t>() + 1;
  step_t.fill_(static_cast<double>(step));
  QGRAD_DISPATCH_FLOAT(p.dtype(), "Adam::step", [&] {
    adam_kernel<scalar_t>(p.data_ptr<scalar_t>(), g.data_ptr<scalar_t>(), m.data_ptr<scalar_t>(),
                          v.data_ptr<scalar_t>(),
                          vmax.defined() ? vmax.data_ptr<scalar_t>() : nullptr, p.numel(), cfg,
                          step);
  });
  m.bump_version();
  v.bump_version();
  if (vmax.defined()) vmax.bump_version();
}

}  // namespace qgrad::optim
