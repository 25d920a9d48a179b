// Adam: options, validation and step() over the shared update in adam_update.cpp.
#include "nn/optim/adam.h"

#include "nn/optim/adam_update.h"

namespace qgrad::optim {

std::unique_ptr<OptimizerOptions> AdamOptions::clone() const {
  return std::make_unique<AdamOptions>(*this);
}

std::vector<std::pair<std::string, double>> AdamOptions::items() const {
  return adam_option_items(*this);
}

void AdamOptions::set_item(const std::string& name, double value) {
  adam_set_option_item(*this, "AdamOptions", name, value);
}

Adam::Adam(std::vector<Tensor> params, const AdamOptions& options)
    : Adam(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults)
    : Optimizer(defaults.clone()) {
  check_options(defaults);
  std::size_t n = 0;
  for (auto& g : groups) {
    n += g.params().size();
    add_param_group(std::move(g));
  }
  QGRAD_CHECK(n > 0, ValueError, "Adam: got an empty parameter list");
}

void Adam::check_options(const OptimizerOptions& options) const {
  const auto* o = dynamic_cast<const AdamOptions*>(&options);
  QGRAD_CHECK(o != nullptr, ValueError, "Adam: parameter group options are not AdamOptions");
  adam_check_options(*o, "Adam");
}

void Adam::step() {
  for (auto& group : param_groups()) {
    const AdamStepConfig cfg =
        adam_config(static_cast<const AdamOptions&>(group.options()), /*decoupled=*/false);
    for (const Tensor& param : group.params()) {
      if (!param.grad().defined()) continue;
      update_param(param, [&](const Tensor& p, const Tensor& g) {
        adam_update(p, g, state_for(param), cfg);
      });
    }
  }
}

}  // namespace qgrad::optim
