// Optimisers against torch 1.13 trajectories (tests/fixtures/gen_nn.py): SGD with momentum,
// dampening, Nesterov, weight decay, maximize and per-group options; Adam/AdamW with weight
// decay, amsgrad and maximize; in float32 and float64. Also state_dict resume, non-contiguous
// parameters and error handling.
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <memory>

#include "core/factory.h"
#include "nn/optim/adam.h"
#include "nn/optim/adamw.h"
#include "nn/optim/sgd.h"
#include "nn/serialize/safetensors.h"
#include "nn_test_helpers.h"
#include "ops/binary/binary.h"

using namespace qgrad;
using qgrad_test::load_nn;
using qgrad_test::require_close;

namespace {

constexpr int kSteps = 5;
using Maker = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

std::map<std::string, Maker> variants() {
  using namespace optim;
  std::map<std::string, Maker> v;
  v["sgd"] = [](std::vector<Tensor> ps) { return std::make_unique<SGD>(ps, SGDOptions(0.1)); };
  v["sgd_momentum"] = [](std::vector<Tensor> ps) {
    return std::make_unique<SGD>(ps, SGDOptions(0.1).momentum(0.9));
  };
  v["sgd_dampening_wd"] = [](std::vector<Tensor> ps) {
    return std::make_unique<SGD>(ps,
                                 SGDOptions(0.05).momentum(0.8).dampening(0.3).weight_decay(0.01));
  };
  v["sgd_nesterov_wd"] = [](std::vector<Tensor> ps) {
    return std::make_unique<SGD>(ps,
                                 SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(0.05));
  };
  v["sgd_maximize"] = [](std::vector<Tensor> ps) {
    return std::make_unique<SGD>(ps, SGDOptions(0.1).momentum(0.5).maximize(true));
  };
  v["sgd_groups"] = [](std::vector<Tensor> ps) {
    std::vector<ParamGroup> groups;
    groups.emplace_back(std::vector<Tensor>{ps[0]});
    groups.emplace_back(std::vector<Tensor>{ps[1]},
                        std::make_unique<SGDOptions>(SGDOptions(0.01).momentum(0.5)));
    return std::make_unique<SGD>(std::move(groups), SGDOptions(0.1).momentum(0.9));
  };
  v["adam"] = [](std::vector<Tensor> ps) { return std::make_unique<Adam>(ps, AdamOptions(0.01)); };
  v["adam_wd_amsgrad"] = [](std::vector<Tensor> ps) {
    return std::make_unique<Adam>(
        ps, AdamOptions(0.02).betas({0.8, 0.9}).eps(1e-6).weight_decay(0.1).amsgrad(true));
  };
  v["adamw"] = [](std::vector<Tensor> ps) {
    return std::make_unique<AdamW>(ps, AdamWOptions(0.01));
  };
  v["adamw_amsgrad_max"] = [](std::vector<Tensor> ps) {
    return std::make_unique<AdamW>(
        ps, AdamWOptions(0.02).betas({0.85, 0.95}).weight_decay(0.3).amsgrad(true).maximize(true));
  };
  return v;
}

struct Fixture {
  std::vector<Tensor> init;   // per parameter
  std::vector<Tensor> grads;  // per parameter, [steps, ...]
};

Fixture load_fixture(const std::string& tag) {
  Fixture f;
  for (int j = 0; j < 2; ++j) {
    f.init.push_back(load_nn("optim_init_" + tag + "_p" + std::to_string(j)));
    f.grads.push_back(load_nn("optim_grads_" + tag + "_p" + std::to_string(j)));
  }
  return f;
}

std::vector<Tensor> fresh_params(const Fixture& f) {
  std::vector<Tensor> ps;
  for (const auto& t : f.init) ps.push_back(t.clone().set_requires_grad());
  return ps;
}

void set_grads(const std::vector<Tensor>& ps, const Fixture& f, int step) {
  for (std::size_t j = 0; j < ps.size(); ++j) ps[j].set_grad(f.grads[j].select(0, step).clone());
}

// Tolerances: float64 follows torch to rounding; float32 differs by FMA use in ATen's vector
// kernels, a few ulps per step.
double rtol_for(const std::string& tag) {
  return tag == "f64" ? 1e-12 : 1e-6;
}
double atol_for(const std::string& tag) {
  return tag == "f64" ? 1e-14 : 1e-7;
}

}  // namespace

TEST_CASE("optim: trajectories match torch 1.13 for every variant and dtype") {
  for (const std::string& tag : std::vector<std::string>{"f32", "f64"}) {
    const Fixture f = load_fixture(tag);
    for (const auto& [name, make] : variants()) {
      auto ps = fresh_params(f);
      auto opt = make(ps);
      for (int k = 0; k < kSteps; ++k) {
        set_grads(ps, f, k);
        opt->step();
        for (int j = 0; j < 2; ++j) {
          Tensor ref = load_nn("optim_" + name + "_" + tag + "_p" + std::to_string(j)).select(0, k);
          require_close(
              ps[j], ref, rtol_for(tag), atol_for(tag),
              name + " " + tag + " step " + std::to_string(k) + " param " + std::to_string(j));
        }
      }
    }
  }
}

TEST_CASE("optim: resuming from a saved state dict continues the trajectory exactly") {
  const Fixture f = load_fixture("f32");
  for (const std::string& name :
       std::vector<std::string>{"sgd_nesterov_wd", "sgd_groups", "adam_wd_amsgrad", "adamw"}) {
    INFO(name);
    auto make = variants().at(name);
    auto ps = fresh_params(f);
    auto opt = make(ps);
    for (int k = 0; k < 2; ++k) {
      set_grads(ps, f, k);
      opt->step();
    }
    // Round-trip the state through safetensors bytes, as a checkpoint would.
    const std::string bytes = serialize::serialize_safetensors(opt->state_dict());
    const TensorDict state = serialize::deserialize_safetensors(bytes).tensors;
    std::vector<Tensor> ps2;
    for (const auto& p : ps) ps2.push_back(p.detach().clone().set_requires_grad());
    auto opt2 = make(ps2);
    opt2->load_state_dict(state);
    for (int k = 2; k < kSteps; ++k) {
      set_grads(ps, f, k);
      set_grads(ps2, f, k);
      opt->step();
      opt2->step();
    }
    for (int j = 0; j < 2; ++j) {
      REQUIRE(ps2[j].to_vector<float>() == ps[j].to_vector<float>());
      Tensor ref = load_nn("optim_" + name + "_f32_p" + std::to_string(j)).select(0, kSteps - 1);
      require_close(ps2[j], ref, 1e-6, 1e-7, name);
    }
  }
}

TEST_CASE("optim: state_dict layout names groups, options and per-parameter state") {
  const Fixture f = load_fixture("f64");
  auto ps = fresh_params(f);
  optim::Adam opt(ps, optim::AdamOptions(0.01).amsgrad(true));
  set_grads(ps, f, 0);
  opt.step();
  auto sd = opt.state_dict();
  REQUIRE(sd["param_groups.0.lr"].item<double>() == 0.01);
  REQUIRE(sd["param_groups.0.amsgrad"].item<double>() == 1.0);
  REQUIRE(sd["param_groups.0.params"].to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 1});
  REQUIRE(sd["state.0.step"].item<std::int64_t>() == 1);
  REQUIRE(sd["state.1.exp_avg"].shape() == Shape{5});
  REQUIRE(sd.contains("state.0.max_exp_avg_sq"));
  REQUIRE(opt.state(ps[0]) != nullptr);
  REQUIRE(opt.state(ps[0])->contains("exp_avg_sq"));
}

TEST_CASE("optim: loading state dicts that do not fit is a ValueError listing every problem") {
  const Fixture f = load_fixture("f32");
  auto ps = fresh_params(f);
  optim::Adam adam(ps, optim::AdamOptions(0.01));
  set_grads(ps, f, 0);
  adam.step();
  const TensorDict adam_state = adam.state_dict();

  auto ps2 = fresh_params(f);
  optim::SGD sgd(ps2, optim::SGDOptions(0.1).momentum(0.9));
  try {
    sgd.load_state_dict(adam_state);
    FAIL("SGD accepted Adam state");
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Catch::Contains("SGD::load_state_dict"));
    CHECK_THAT(msg, Catch::Contains("unknown option 'beta1'"));
    CHECK_THAT(msg, Catch::Contains("no state named 'exp_avg'"));
  }

  // Same kind, mis-shaped state and an extra group.
  TensorDict bad = adam_state;
  bad.insert_or_assign("state.1.exp_avg", zeros({4}));
  bad.insert("param_groups.3.lr", scalar_tensor(0.1, TensorOptions().dtype(kFloat64)));
  bad.insert("bogus", zeros({1}));
  auto ps3 = fresh_params(f);
  optim::Adam adam2(ps3, optim::AdamOptions(0.5));
  try {
    adam2.load_state_dict(bad);
    FAIL("Adam accepted a mis-shaped state");
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Catch::Contains("size mismatch for 'state.1.exp_avg'"));
    CHECK_THAT(msg, Catch::Contains("group 3"));
    CHECK_THAT(msg, Catch::Contains("unexpected key 'bogus'"));
  }
  // Nothing changed.
  REQUIRE(adam2.param_groups()[0].options().get_lr() == 0.5);
  REQUIRE(adam2.state(ps3[0]) == nullptr);

  // A group of a different size.
  auto ps4 = fresh_params(f);
  optim::Adam adam3(std::vector<Tensor>{ps4[0]}, optim::AdamOptions(0.5));
  REQUIRE_THROWS_WITH(adam3.load_state_dict(adam_state), Catch::Contains("holds 2 parameters"));
}

TEST_CASE("optim: non-contiguous parameters are updated like contiguous ones") {
  const Fixture f = load_fixture("f32");
  // A [4, 3] leaf viewed as the transpose of the fixture's [3, 4] parameter.
  Tensor storage = f.init[0].t().contiguous();
  Tensor p0 = storage.t().detach().set_requires_grad();
  REQUIRE_FALSE(p0.is_contiguous());
  Tensor p1 = f.init[1].clone().set_requires_grad();
  optim::SGD opt({p0, p1}, optim::SGDOptions(0.1).momentum(0.9));
  for (int k = 0; k < kSteps; ++k) {
    set_grads({p0, p1}, f, k);
    opt.step();
  }
  require_close(p0, load_nn("optim_sgd_momentum_f32_p0").select(0, kSteps - 1), 1e-6, 1e-7);
  REQUIRE_FALSE(p0.is_contiguous());  // still the same view
}

TEST_CASE("optim: parameters without gradients are skipped and zero_grad clears gradients") {
  Tensor a = ones({3}).set_requires_grad(), b = ones({2}).set_requires_grad();
  optim::Adam opt({a, b}, optim::AdamOptions(0.1));
  a.set_grad(ones({3}));
  opt.step();
  REQUIRE(b.to_vector<float>() == std::vector<float>{1, 1});
  REQUIRE(opt.state(b) == nullptr);
  REQUIRE(a.to_vector<float>()[0] == Approx(0.9f));
  opt.zero_grad();
  REQUIRE_FALSE(a.grad().defined());
}

TEST_CASE("optim: bad parameters, options and gradients are rejected clearly") {
  using namespace optim;
  Tensor p = ones({3}).set_requires_grad();
  REQUIRE_THROWS_WITH(SGD(std::vector<Tensor>{}, SGDOptions(0.1)),
                      Catch::Contains("empty parameter list"));
  REQUIRE_THROWS_WITH(SGD({p, p}, SGDOptions(0.1)), Catch::Contains("more than once"));
  REQUIRE_THROWS_WITH(SGD({p * 2.0}, SGDOptions(0.1)), Catch::Contains("leaf"));
  REQUIRE_THROWS_AS(SGD({zeros({2}, TensorOptions().dtype(kInt64))}, SGDOptions(0.1)), DTypeError);
  REQUIRE_THROWS_WITH(SGD({p}, SGDOptions(-1.0)), Catch::Contains("learning rate"));
  REQUIRE_THROWS_WITH(SGD({p}, SGDOptions(0.1).nesterov(true)), Catch::Contains("Nesterov"));
  REQUIRE_THROWS_WITH(Adam({p}, AdamOptions().betas({0.9, 1.0})),
                      Catch::Contains("beta parameter at index 1"));
  REQUIRE_THROWS_WITH(AdamW({p}, AdamWOptions().eps(-1)), Catch::Contains("epsilon"));
  // Options of another optimiser in a group.
  std::vector<ParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{p}, std::make_unique<AdamOptions>(0.1));
  REQUIRE_THROWS_WITH(SGD(std::move(groups), SGDOptions(0.1)), Catch::Contains("not SGDOptions"));
  // A gradient of another dtype.
  SGD opt({p}, SGDOptions(0.1));
  p.set_grad(ones({3}, TensorOptions().dtype(kFloat64)));
  REQUIRE_THROWS_AS(opt.step(), DTypeError);
  REQUIRE_THROWS_WITH(opt.step(), Catch::Contains("SGD::step"));
}
