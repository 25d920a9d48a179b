// AdamW: options, validation and step() over the shared update in adam_update.cpp.
#include "nn/optim/adamw.h"

#include "nn/optim/adam_update.h"

namespace qgrad::optim {

std::unique_ptr<OptimizerOptions> AdamWOptions::clone() const {
  return std::make_unique<AdamWOptions>(*this);
}

std::vector<std::pair<std::string, double>> AdamWOptions::items() const {
  return adam_option_items(*this);
}

void AdamWOptions::set_item(const std::string& name, double value) {
  adam_set_option_item(*this, "AdamWOptions", name, value);
}

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& options)
    : AdamW(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

AdamW::AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults)
    : Optimizer(defaults.clone()) {
  check_options(defaults);
  std::size_t n = 0;
  for (auto& g : groups) {
    n += g.params().size();
    add_param_group(std::move(g));
  }
  QGRAD_CHECK(n > 0, ValueError, "AdamW: got an empty parameter list");
}

void AdamW::check_options(const OptimizerOptions& options) const {
  const auto* o = dynamic_cast<const AdamWOptions*>(&options);
  QGRAD_CHECK(o != nullptr, ValueError, "AdamW: parameter group options are not AdamWOptions");
  adam_check_options(*o, "AdamW");
}

void AdamW::step() {
  for (auto& group : param_groups()) {
    const AdamStepConfig cfg =
        adam_config(static_cast<const AdamWOptions&>(group.options()), /*decoupled=*/true);
    for (const Tensor& param : group.params()) {
      if (!param.grad().defined()) continue;
      update_param(param, [&](const Tensor& p, const Tensor& g) {
        adam_update(p, g, state_for(param), cfg);
      });
    }
  }
}

}  // namespace qgrad::optim
