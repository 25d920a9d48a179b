// Class targets out of range on the GPU (part of test_gpu, Skipped without a GPU): the loss
// kernels check them without making the host wait (core/cuda_deferred_error.h), so the op
// returns, its result is NaN, and the next wait for the GPU (here item()) throws an IndexError
// naming the op, the value and its position; the error is then cleared and the device works on.
// And the losses and gradients, whose totals now stay on the GPU, against the CPU.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/device.h"
#include "core/factory.h"
#include "ops/loss/loss.h"
#include "ops/reduce/reduce.h"

using namespace qgrad;

namespace {

Tensor targets(const std::vector<std::int64_t>& v) {
  return from_vector<std::int64_t>(v, {static_cast<std::int64_t>(v.size())}).to(kCUDA);
}

}  // namespace

TEST_CASE("cuda loss targets: a target out of range is an IndexError at the next wait") {
  Generator gen(3);
  const Tensor x0 = randn({4, 5}, gen);
  for (const bool ce : {true, false}) {
    INFO((ce ? "cross_entropy" : "nll_loss"));
    const Tensor x = x0.to(kCUDA).set_requires_grad(true);
    const Tensor bad = targets({0, 7, 2, -100});
    Tensor loss = ce ? cross_entropy(x, bad) : nll_loss(x, bad);  // no throw: nothing waited
    CHECK_THROWS_WITH(loss.item<double>(), Catch::Contains(ce ? "cross_entropy" : "nll_loss") &&
                                               Catch::Contains("target value 7") &&
                                               Catch::Contains("flat position 1") &&
                                               Catch::Contains("5 classes"));
    // Cleared: the same result read again is simply NaN, and a good call works.
    CHECK(std::isnan(loss.item<double>()));
    const Tensor good = targets({0, 4, 2, -100});
    Tensor ok = ce ? cross_entropy(x, good) : nll_loss(x, good);
    CHECK(std::isfinite(ok.item<double>()));
    // Negative targets other than ignore_index, and the backward of a bad batch: NaN gradients,
    // no out-of-bounds write.
    Tensor neg =
        ce ? cross_entropy(x, targets({-3, 1, 1, 1})) : nll_loss(x, targets({-3, 1, 1, 1}));
    neg.backward();
    CHECK_THROWS_WITH(synchronize(kCUDA), Catch::Contains("target value -3"));
    const std::vector<float> gx = x.grad().to(kCPU).to_vector<float>();
    CHECK(std::isnan(gx[0]));
  }
}

TEST_CASE("cuda loss targets: the CPU and GPU give the same losses and gradients") {
  Generator gen(4);
  const Tensor x0 = randn({6, 4, 3}, gen, TensorOptions().dtype(kFloat64));
  const Tensor t0 = from_vector<std::int64_t>(
      {0, 3, 1, -100, 2, 2, 1, 0, 3, 3, -100, 1, 2, 0, 1, 1, 3, 2}, {6, 3});
  const Tensor w = from_vector<double>({1.0, 0.5, 2.0, 1.5}, {4});
  for (const char* red : {"mean", "sum", "none"}) {
    INFO("reduction " << red);
    auto run = [&](Device d) {
      Tensor x = x0.detach().to(d).set_requires_grad(true);
      Tensor loss = cross_entropy(
          x, t0.to(d), CrossEntropyOptions().weight(w.to(d)).reduction(red).label_smoothing(0.1));
      sum(loss).backward();
      return std::make_pair(loss.to(kCPU).to_vector<double>(),
                            x.grad().to(kCPU).to_vector<double>());
    };
    const auto cpu = run(kCPU), gpu = run(kCUDA);
    REQUIRE(cpu.first.size() == gpu.first.size());
    for (std::size_t i = 0; i < cpu.first.size(); ++i)
      CHECK(std::fabs(cpu.first[i] - gpu.first[i]) <= 1e-12 * (1 + std::fabs(cpu.first[i])));
    for (std::size_t i = 0; i < cpu.second.size(); ++i)
      CHECK(std::fabs(cpu.second[i] - gpu.second[i]) <= 1e-12 * (1 + std::fabs(cpu.second[i])));
  }
}
