// Adam/AdamW state handling around the fused "adam_update" kernel (optim_elem.h). The step
// counter stays a CPU int64 tensor, as torch's (non-capturable) Adam keeps it.
#include "nn/optim/adam_update.h"

#include "core/factory.h"

namespace qgrad::optim {

namespace {

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
  static const KernelTable<AdamUpdateKernel>& table = kernel_table(kAdamUpdateKernels);
  table(cfg.decoupled_weight_decay ? "AdamW::step" : "Adam::step", p)(p, g, m, v, vmax, cfg, step);
  m.bump_version();
  v.bump_version();
  if (vmax.defined()) vmax.bump_version();
}

}  // namespace qgrad::optim
