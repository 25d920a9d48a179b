// AdamFamily's options validation, state handling and step(), compiled once for each of its two
// named types (Adam, AdamW). The step counter stays a CPU int64 tensor, as torch's
// (non-capturable) Adam keeps it.
#include "nn/optim/adam_family.h"

#include <cstdint>
#include <utility>

#include "core/factory.h"
#include "nn/optim/adam.h"
#include "nn/optim/adamw.h"
#include "nn/optim/optim_kernels.h"

namespace qgrad::optim {

namespace {

// Handles, not references: inserting into the dict may move its items.
Tensor state_tensor(TensorDict& state, const char* name, const Tensor& like) {
  if (Tensor* t = state.find(name)) return *t;
  return state.insert(name, zeros_like(like));
}

// Updates contiguous `p` in place from contiguous `g`, creating missing entries in `state`.
void adam_update(const char* op, const Tensor& p, const Tensor& g, TensorDict& state,
                 const AdamStepConfig& cfg) {
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
  table(op, p)(p, g, m, v, vmax, cfg, step);
  m.bump_version();
  v.bump_version();
  if (vmax.defined()) vmax.bump_version();
}

}  // namespace

template <class Options>
AdamFamily<Options>::AdamFamily(std::vector<Tensor> params, const Options& options)
    : AdamFamily(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

template <class Options>
AdamFamily<Options>::AdamFamily(std::vector<ParamGroup> groups, const Options& defaults)
    : Optimizer(defaults.clone()) {
  check_options(defaults);
  std::size_t n = 0;
  for (auto& g : groups) {
    n += g.params().size();
    add_param_group(std::move(g));
  }
  QGRAD_CHECK(n > 0, ValueError, Options::kOptimizerName, ": got an empty parameter list");
}

template <class Options>
void AdamFamily<Options>::check_options(const OptimizerOptions& options) const {
  constexpr const char* op = Options::kOptimizerName;
  const auto* o = dynamic_cast<const Options*>(&options);
  QGRAD_CHECK(o != nullptr, ValueError, op, ": parameter group options are not ", Options::kName);
  QGRAD_CHECK(o->lr() >= 0, ValueError, op, ": invalid learning rate ", o->lr());
  QGRAD_CHECK(o->eps() >= 0, ValueError, op, ": invalid epsilon value ", o->eps());
  QGRAD_CHECK(o->betas().first >= 0 && o->betas().first < 1, ValueError, op,
              ": invalid beta parameter at index 0: ", o->betas().first);
  QGRAD_CHECK(o->betas().second >= 0 && o->betas().second < 1, ValueError, op,
              ": invalid beta parameter at index 1: ", o->betas().second);
  QGRAD_CHECK(o->weight_decay() >= 0, ValueError, op, ": invalid weight_decay value ",
              o->weight_decay());
}

template <class Options>
void AdamFamily<Options>::step() {
  const std::string op = name() + "::step";
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const Options&>(group.options());
    AdamStepConfig cfg;
    cfg.lr = o.lr();
    cfg.beta1 = o.betas().first;
    cfg.beta2 = o.betas().second;
    cfg.eps = o.eps();
    cfg.weight_decay = o.weight_decay();
    cfg.amsgrad = o.amsgrad();
    cfg.maximize = o.maximize();
    cfg.decoupled_weight_decay = Options::kDecoupledWeightDecay;
    for (const Tensor& param : group.params()) {
      if (!param.grad().defined()) continue;
      update_param(param, [&](const Tensor& p, const Tensor& g) {
        adam_update(op.c_str(), p, g, state_for(param), cfg);
      });
    }
  }
}

template class AdamFamily<AdamOptions>;
template class AdamFamily<AdamWOptions>;

}  // namespace qgrad::optim
