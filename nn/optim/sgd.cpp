// SGD: options, validation and the fused per-element update (one pass over p, grad, buf).
#include "nn/optim/sgd.h"

#include "core/factory.h"
#include "core/strided_loop.h"

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

namespace {

// Each line mirrors one tensor op of torch's _single_tensor_sgd, with the scalars cast to the
// tensor's dtype as ATen does.
template <typename T>
void sgd_update(T* p, const T* g, T* buf, std::int64_t n, const SGDOptions& o, bool first) {
  const bool use_wd = o.weight_decay() != 0, use_momentum = o.momentum() != 0;
  const T wd = static_cast<T>(o.weight_decay()), mom = static_cast<T>(o.momentum());
  const T one_minus_damp = static_cast<T>(1 - o.dampening());
  const T neg_lr = static_cast<T>(-o.lr());
  const bool maximize = o.maximize(), nesterov = o.nesterov();
  parallel_for(n, kParallelGrain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
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
  });
}

}  // namespace

void SGD::step() {
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const SGDOptions&>(group.options());
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
        QGRAD_DISPATCH_FLOAT(p.dtype(), "SGD::step", [&] {
          sgd_update<scalar_t>(p.data_ptr<scalar_t>(), g.data_ptr<scalar_t>(),
                               buf.defined() ? buf.data_ptr<scalar_t>() : nullptr, p.numel(), o,
                               first);
        });
        if (buf.defined()) buf.bump_version();
      });
    }
  }
}

}  // namespace qgrad::optim
