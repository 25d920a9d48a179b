// LR schedulers against torch 1.13's learning-rate sequences (two parameter groups), scheduler
// state save/resume, and argument errors.
#include <catch2/catch.hpp>

#include <functional>
#include <map>

#include "core/factory.h"
#include "nn/optim/lr_scheduler.h"
#include "nn/optim/sgd.h"
#include "nn_test_helpers.h"

using namespace qgrad;
using namespace qgrad::optim;
using qgrad_test::load_nn;

namespace {

struct Setup {
  Tensor p0 = zeros({2}).set_requires_grad();
  Tensor p1 = zeros({3}).set_requires_grad();
  std::unique_ptr<SGD> opt;
  Setup() {
    std::vector<ParamGroup> groups;
    groups.emplace_back(std::vector<Tensor>{p0});
    groups.emplace_back(std::vector<Tensor>{p1}, std::make_unique<SGDOptions>(0.05));
    opt = std::make_unique<SGD>(std::move(groups), SGDOptions(0.1));
  }
};

using Make = std::function<std::shared_ptr<LRScheduler>(Optimizer&)>;

std::map<std::string, std::pair<int, Make>> variants() {
  std::map<std::string, std::pair<int, Make>> v;
  v["step"] = {12, [](Optimizer& o) { return std::make_shared<StepLR>(o, 3, 0.5); }};
  v["multistep"] = {
      12, [](Optimizer& o) {
        return std::make_shared<MultiStepLR>(o, std::vector<std::int64_t>{2, 5, 5, 9}, 0.1);
      }};
  v["cosine"] = {15, [](Optimizer& o) { return std::make_shared<CosineAnnealingLR>(o, 5, 0.001); }};
  v["linear"] = {8, [](Optimizer& o) { return std::make_shared<LinearLR>(o, 0.1, 1.0, 4); }};
  v["linear_down"] = {8, [](Optimizer& o) { return std::make_shared<LinearLR>(o, 1.0, 0.2, 5); }};
  v["sequential"] = {12, [](Optimizer& o) {
                       auto warm = std::make_shared<LinearLR>(o, 0.1, 1.0, 3);
                       auto cos = std::make_shared<CosineAnnealingLR>(o, 6, 0.0);
                       return std::make_shared<SequentialLR>(
                           o, std::vector<std::shared_ptr<LRScheduler>>{warm, cos},
                           std::vector<std::int64_t>{3});
                     }};
  v["chained"] = {10, [](Optimizer& o) {
                    auto lin = std::make_shared<LinearLR>(o, 0.5, 1.0, 3);
                    auto step = std::make_shared<StepLR>(o, 2, 0.8);
                    return std::make_shared<ChainedScheduler>(
                        std::vector<std::shared_ptr<LRScheduler>>{lin, step});
                  }};
  return v;
}

void require_lrs(const std::vector<double>& got, const Tensor& ref, int row,
                 const std::string& what) {
  auto r = ref.select(0, row).to_vector<double>();
  REQUIRE(got.size() == r.size());
  for (std::size_t g = 0; g < r.size(); ++g) {
    INFO(what << " step " << row << " group " << g << ": " << got[g] << " vs " << r[g]);
    REQUIRE(got[g] == Approx(r[g]).epsilon(1e-13).margin(1e-16));
  }
}

}  // namespace

TEST_CASE("lr_scheduler: learning-rate sequences match torch 1.13") {
  for (const auto& [name, spec] : variants()) {
    const auto& [steps, make] = spec;
    const Tensor ref = load_nn("sched_" + name);
    REQUIRE(ref.size(0) == steps + 1);
    Setup s;
    auto sched = make(*s.opt);
    require_lrs(sched->get_last_lr(), ref, 0, name);
    for (int k = 1; k <= steps; ++k) {
      s.opt->step();
      sched->step();
      require_lrs(sched->get_last_lr(), ref, k, name);
      // The optimiser's groups carry the same rates.
      require_lrs({s.opt->param_groups()[0].options().get_lr(),
                   s.opt->param_groups()[1].options().get_lr()},
                  ref, k, name + " (optimizer)");
    }
  }
}

TEST_CASE("lr_scheduler: LinearWarmup is LinearLR up to 1") {
  Setup s;
  LinearWarmup warm(*s.opt, 0.1, 4);
  const Tensor ref = load_nn("sched_linear");
  for (int k = 0; k <= 8; ++k) {
    require_lrs(warm.get_last_lr(), ref, k, "warmup");
    warm.step();
  }
}

TEST_CASE("lr_scheduler: state dict resume reproduces the rest of the sequence") {
  for (const std::string& name : std::vector<std::string>{"cosine", "sequential", "chained"}) {
    const auto spec = variants().at(name);
    const int steps = spec.first;
    const Make make = spec.second;
    const Tensor ref = load_nn("sched_" + name);
    Setup a;
    auto sa = make(*a.opt);
    for (int k = 1; k <= 4; ++k) sa->step();
    const TensorDict sched_state = sa->state_dict();
    const TensorDict opt_state = a.opt->state_dict();

    Setup b;
    auto sb = make(*b.opt);
    b.opt->load_state_dict(opt_state);  // restores the groups' current lr and initial_lr
    sb->load_state_dict(sched_state);
    REQUIRE(sb->last_epoch() == sa->last_epoch());
    for (int k = 5; k <= steps; ++k) {
      sb->step();
      require_lrs(sb->get_last_lr(), ref, k, name + " resumed");
    }
  }
}

TEST_CASE("lr_scheduler: bad arguments and state are rejected") {
  Setup s;
  REQUIRE_THROWS_AS(StepLR(*s.opt, 0), ValueError);
  REQUIRE_THROWS_AS(CosineAnnealingLR(*s.opt, 0), ValueError);
  REQUIRE_THROWS_WITH(LinearLR(*s.opt, 0.0), Catch::Contains("start_factor"));
  REQUIRE_THROWS_WITH(LinearLR(*s.opt, 0.5, 1.5), Catch::Contains("end_factor"));
  auto a = std::make_shared<StepLR>(*s.opt, 2);
  REQUIRE_THROWS_WITH(SequentialLR(*s.opt, {a}, {3}), Catch::Contains("milestones"));
  Setup other;
  auto b = std::make_shared<StepLR>(*other.opt, 2);
  REQUIRE_THROWS_WITH(SequentialLR(*s.opt, {a, b}, {3}), Catch::Contains("same optimizer"));
  REQUIRE_THROWS_WITH(ChainedScheduler({a, b}), Catch::Contains("same optimizer"));

  // Resuming (last_epoch != -1) needs initial_lr in every group.
  Setup fresh;
  REQUIRE_THROWS_WITH(StepLR(*fresh.opt, 2, 0.1, 5), Catch::Contains("initial_lr"));

  TensorDict bad = a->state_dict();
  bad.insert_or_assign("base_lrs", from_vector<double>({0.1}));
  bad.insert("extra", zeros({1}));
  try {
    a->load_state_dict(bad);
    FAIL("accepted bad scheduler state");
  } catch (const ValueError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("one per parameter group") &&
                                          Catch::Contains("unexpected key 'extra'"));
  }
}
