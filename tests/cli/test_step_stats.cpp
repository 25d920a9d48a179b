// StepStats (cli/step_stats.h): what a window of steps sums to on the device, read back at once;
// non-finite losses are counted and the first one's batch is kept.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "cli/step_stats.h"
#include "core/factory.h"

using namespace qgrad;
using qgrad::cli::StepStats;

namespace {

Tensor logits_for(const std::vector<std::int64_t>& predicted) {
  // One-hot-ish logits [N, 3] whose argmax is `predicted`.
  std::vector<float> v(predicted.size() * 3, 0.0f);
  for (std::size_t i = 0; i < predicted.size(); ++i)
    v[i * 3 + static_cast<std::size_t>(predicted[i])] = 1.0f;
  return from_vector(v, {static_cast<std::int64_t>(predicted.size()), 3});
}

Tensor targets(const std::vector<std::int64_t>& t) {
  return from_vector(t, {static_cast<std::int64_t>(t.size())});
}

}  // namespace

TEST_CASE("step stats: a window sums losses times batch sizes and correct predictions") {
  StepStats s(kCPU, 3);
  CHECK(s.empty());
  s.add(scalar_tensor(0.5), logits_for({0, 1}), targets({0, 2}), 0);               // 1 correct of 2
  s.add(scalar_tensor(0.25), logits_for({2, 2, 1, 0}), targets({2, 2, 1, 0}), 1);  // 4 of 4
  CHECK_FALSE(s.due());
  s.add(scalar_tensor(1.0), logits_for({1}), targets({0}), 2);  // 0 of 1
  CHECK(s.due());
  const StepStats::Window w = s.read();
  CHECK(w.loss_sum == 0.5 * 2 + 0.25 * 4 + 1.0 * 1);
  CHECK(w.correct == 5);
  CHECK(w.examples == 7);
  CHECK(w.steps == 3);
  CHECK(w.nonfinite_steps == 0);
  CHECK(w.first_nonfinite_batch == -1);
  CHECK(s.empty());  // read() starts a new window
  CHECK(s.read().examples == 0);
}

TEST_CASE("step stats: non-finite losses are counted and the first one's batch is named") {
  StepStats s(kCPU, 10);
  s.add(scalar_tensor(0.5), logits_for({0}), targets({0}), 4);
  s.add(scalar_tensor(std::numeric_limits<double>::infinity()), logits_for({0}), targets({0}), 5);
  s.add(scalar_tensor(std::nan("")), logits_for({0}), targets({0}), 6);
  const StepStats::Window w = s.read();
  CHECK(w.nonfinite_steps == 2);
  CHECK(w.first_nonfinite_batch == 5);
  CHECK(std::isnan(w.loss_sum));
}

TEST_CASE("step stats: bad arguments are errors naming it") {
  CHECK_THROWS_WITH(StepStats(kCPU, 0),
                    Catch::Contains("StepStats") && Catch::Contains("read_every"));
  StepStats s(kCPU, 1);
  CHECK_THROWS_WITH(s.add(scalar_tensor(1.0), zeros({2, 3}), targets({0}), 0),
                    Catch::Contains("StepStats") && Catch::Contains("[2, 3]"));
}
