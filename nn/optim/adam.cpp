// The Adam family: options (de)serialisation, validation and step() over the shared update in
// adam_update.cpp, instantiated for Adam and AdamW; Adam's constructors.
#include "nn/optim/adam.h"

#include "nn/optim/adam_update.h"
#include "nn/optim/adamw.h"

namespace qgrad::optim {

template <typename Derived>
std::unique_ptr<OptimizerOptions> AdamOptionsBase<Derived>::clone() const {
  return std::make_unique<Derived>(static_cast<const Derived&>(*this));
}

template <typename Derived>
std::vector<std::pair<std::string, double>> AdamOptionsBase<Derived>::items() const {
  return adam_option_items(*this);
}

template <typename Derived>
void AdamOptionsBase<Derived>::set_item(const std::string& name, double value) {
  adam_set_option_item(*this, Derived::kTypeName, name, value);
}

template <typename Options, bool kDecoupled>
AdamFamily<Options, kDecoupled>::AdamFamily(std::vector<ParamGroup> groups, const Options& defaults,
                                            const char* op)
    : Optimizer(defaults.clone()), op_(op) {
  check_options(defaults);
  std::size_t n = 0;
  for (auto& g : groups) {
    n += g.params().size();
    add_param_group(std::move(g));
  }
  QGRAD_CHECK(n > 0, ValueError, op_, ": got an empty parameter list");
}

template <typename Options, bool kDecoupled>
void AdamFamily<Options, kDecoupled>::check_options(const OptimizerOptions& options) const {
  const auto* o = dynamic_cast<const Options*>(&options);
  QGRAD_CHECK(o != nullptr, ValueError, op_, ": parameter group options are not ",
              Options::kTypeName);
  adam_check_options(*o, op_);
}

template <typename Options, bool kDecoupled>
void AdamFamily<Options, kDecoupled>::step() {
  for (auto& group : param_groups()) {
    const AdamStepConfig cfg =
        adam_config(static_cast<const Options&>(group.options()), /*decoupled=*/kDecoupled);
    for (const Tensor& param : group.params()) {
      if (!param.grad().defined()) continue;
      update_param(param, [&](const Tensor& p, const Tensor& g) {
        adam_update(p, g, state_for(param), cfg);
      });
    }
  }
}

template class AdamOptionsBase<AdamOptions>;
template class AdamOptionsBase<AdamWOptions>;
template class AdamFamily<AdamOptions, false>;
template class AdamFamily<AdamWOptions, true>;

Adam::Adam(std::vector<Tensor> params, const AdamOptions& options)
    : Adam(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults)
    : AdamFamily(std::move(groups), defaults, "Adam") {}

}  // namespace qgrad::optim
