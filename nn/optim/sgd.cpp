// SGD: options, validation and the fused per-element update (one pass over p, grad, buf).
#include "nn/optim/sgd.h"

#include "core/factory.h"
#include "nn/optim/optim_kernels.h"

namespace qgrad::optim {

std::unique_ptr<OptimizerOptions> SGDOptions::clone() const {
  return std::make_unique<SGDOptions>(*this);
}

std::vector<std::pair<std::string, double>> SGDOptions::items() const {
  return {{"lr", lr_},
          {"momentum", momentum_},
          {"dampening", dampening_},
          {"weight_decay", weight_decay_},
          {"nesterov", nesterov_ ? 1.0 : 0.0},
          {"maximize", maximize_ ? 1.0 : 0.0}};
}

void SGDOptions::set_item(const std::string& name, double value) {
  if (name == "lr")
    lr_ = value;
  else if (name == "momentum")
    momentum_ = value;
  else if (name == "dampening")
    dampening_ = value;
  else if (name == "weight_decay")
    weight_decay_ = value;
  else if (name == "nesterov")
    nesterov_ = value != 0;
  else if (name == "maximize")
    maximize_ = value != 0;
  else
    throw ValueError("SGDOptions: unknown option '" + name + "'");
}

SGD::SGD(std::vector<Tensor> params, const SGDOptions& options)
    : SGD(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

SGD::SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults) : Optimizer(defaults.clone()) {
  check_options(defaults);
  std::size_t n = 0;
  for (auto& g : groups) {
    n += g.params().size();
    add_param_group(std::move(g));
  }
  QGRAD_CHECK(n > 0, ValueError, "SGD: got an empty parameter list");
}

void SGD::check_options(const OptimizerOptions& options) const {
  const auto* o = dynamic_cast<const SGDOptions*>(&options);
  QGRAD_CHECK(o != nullptr, ValueError, "SGD: parameter group options are not SGDOptions");
  QGRAD_CHECK(o->lr() >= 0, ValueError, "SGD: invalid learning rate ", o->lr());
  QGRAD_CHECK(o->momentum() >= 0, ValueError, "SGD: invalid momentum value ", o->momentum());
  QGRAD_CHECK(o->weight_decay() >= 0, ValueError, "SGD: invalid weight_decay value ",
              o->weight_decay());
  QGRAD_CHECK(!o->nesterov() || (o->momentum() > 0 && o->dampening() == 0), ValueError,
              "SGD: Nesterov momentum requires a momentum and zero dampening, got momentum=",
              o->momentum(), " dampening=", o->dampening());
}

void SGD::step() {
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const SGDOptions&>(group.options());
    SgdStepConfig config;
    config.lr = o.lr();
    config.momentum = o.momentum();
    config.dampening = o.dampening();
    config.weight_decay = o.weight_decay();
    config.nesterov = o.nesterov();
    config.maximize = o.maximize();
    for (const Tensor& param : group.params()) {
      if (!param.grad().defined()) continue;
      update_param(param, [&](const Tensor& p, const Tensor& g) {
        Tensor buf;
        bool first = false;
        if (o.momentum() != 0) {
          TensorDict& st = state_for(param);
          if (Tensor* b = st.find("momentum_buffer")) {
            buf = *b;
          } else {
            buf = st.insert("momentum_buffer", empty_like(p));
            first = true;
          }
        }
        static const KernelTable<SgdUpdateKernel>& table = kernel_table(kSgdUpdateKernels);
        table("SGD::step", p)(p, g, buf, config, first);
        if (buf.defined()) buf.bump_version();
      });
    }
  }
}

}  // namespace qgrad::optim
