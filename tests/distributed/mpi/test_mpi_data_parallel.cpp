// DistributedDataParallel on 2+ ranks: rank 0's state broadcast at the start, every rank's
// parameters, gradients and buffers the same bits after every step, gradients all-reduced while
// backward runs, and N ranks with batch B training like one process with batch N x B.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/factory.h"
#include "distributed/data_parallel.h"
#include "mpi_test_support.h"
#include "nn/models/zoo.h"
#include "nn/modules/activation.h"
#include "nn/modules/conv.h"
#include "nn/modules/flatten.h"
#include "nn/modules/linear.h"
#include "nn/modules/pooling.h"
#include "nn/modules/sequential.h"
#include "nn/optim/sgd.h"
#include "ops/loss/loss.h"

using namespace qgrad;
using distributed::DataParallelOptions;
using distributed::DistributedDataParallel;

namespace {

// A small CNN without batch norm: with it, one process with the global batch computes the same
// function as the ranks together (batch norm's local statistics would differ).
std::shared_ptr<nn::Sequential> small_cnn(std::uint64_t seed) {
  Generator g(seed);
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(1, 4, 3), g));
  m->push_back(std::make_shared<nn::ReLU>());
  m->push_back(std::make_shared<nn::MaxPool2d>(2));
  m->push_back(std::make_shared<nn::Flatten>());
  m->push_back(std::make_shared<nn::Linear>(4 * 13 * 13, 10, g));
  return m;
}

struct GlobalBatch {
  Tensor x, y;
};

// Global batch `step` of `rows` examples: the same on every rank.
GlobalBatch global_batch(std::int64_t step, std::int64_t rows) {
  Generator g(1000 + static_cast<std::uint64_t>(step));
  return {randn({rows, 1, 28, 28}, g), randint(0, 10, {rows}, g)};
}

// The largest |a - b| / (1 + |a|) over the parameters of two modules of one architecture.
double max_relative_difference(const nn::Module& a, const nn::Module& b) {
  const std::vector<Tensor> pa = a.parameters(), pb = b.parameters();
  double worst = 0;
  for (std::size_t i = 0; i < pa.size(); ++i) {
    const std::vector<double> va = pa[i].to_vector<double>(), vb = pb[i].to_vector<double>();
    for (std::size_t k = 0; k < va.size(); ++k)
      worst = std::max(worst, std::abs(va[k] - vb[k]) / (1 + std::abs(va[k])));
  }
  return worst;
}

}  // namespace

TEST_CASE("DistributedDataParallel starts every rank from rank 0's parameters and buffers",
          "[ddp]") {
  auto g = qgrad_test::world();
  Generator gen(1 + static_cast<std::uint64_t>(g->rank()));  // a different model on each rank
  std::shared_ptr<nn::Sequential> model = nn::lenet5bn(gen);
  REQUIRE_FALSE(qgrad_test::differing_state(*model).empty());
  DistributedDataParallel ddp(model, g);
  CHECK(qgrad_test::differing_state(*model).empty());
}

TEST_CASE(
    "DistributedDataParallel: parameters, gradients and buffers are the same bits on "
    "every rank after every step",
    "[ddp]") {
  auto g = qgrad_test::world();
  Generator gen(7);
  std::shared_ptr<nn::Sequential> model = nn::lenet5bn(gen);
  // Small buckets: several all-reduces per step, started while backward runs.
  DistributedDataParallel ddp(model, g, DataParallelOptions{0.01, true});
  REQUIRE(ddp.bucket_count() > 1);
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  const std::int64_t b = 8;
  for (std::int64_t step = 0; step < 5; ++step) {
    const GlobalBatch batch = global_batch(step, b * g->size());
    Tensor loss = cross_entropy(model->forward(qgrad_test::rank_part(batch.x)),
                                qgrad_test::rank_part(batch.y));
    opt.zero_grad();
    loss.backward();
    ddp.synchronize();
    for (const Tensor& p : model->parameters()) CHECK(qgrad_test::same_on_all_ranks(p.grad()));
    opt.step();
    INFO("step " << step);
    CHECK(qgrad_test::differing_state(*model).empty());
    // Each rank's loss is its own batch's: they differ (the data differ), the state does not.
  }
  CHECK(ddp.stats().steps == 5);
  CHECK(ddp.stats().started_early > 0);
  CHECK(ddp.stats().all_reduces == 5 * static_cast<std::int64_t>(ddp.bucket_count()));
}

TEST_CASE("2 ranks with batch B train like one process with batch 2B (float tolerance)", "[ddp]") {
  auto g = qgrad_test::world();
  std::shared_ptr<nn::Sequential> ranked = small_cnn(3), whole = small_cnn(3);
  DistributedDataParallel ddp(ranked, g, DataParallelOptions{0.001, true});
  optim::SGD opt_ranked(ranked->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  optim::SGD opt_whole(whole->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  const std::int64_t b = 16;
  double worst_loss = 0;
  for (std::int64_t step = 0; step < 20; ++step) {
    const GlobalBatch batch = global_batch(step, b * g->size());
    worst_loss = std::max(worst_loss, qgrad_test::step_both(*ranked, ddp, opt_ranked, *whole,
                                                            opt_whole, batch.x, batch.y));
  }
  // Not zero: the global batch's mean is summed in another order than the ranks' means and
  // their average, which changes the last bits of every gradient; 20 steps of SGD carry those
  // float32 rounding differences along without amplifying them much.
  const double worst_weight = max_relative_difference(*ranked, *whole);
  INFO("loss " << worst_loss << ", weights " << worst_weight);
  CHECK(worst_loss < 1e-4);
  CHECK(worst_weight < 1e-4);
  CHECK(qgrad_test::differing_state(*ranked).empty());
}

TEST_CASE("DistributedDataParallel leaves the gradient of a parameter no rank used undefined",
          "[ddp]") {
  auto g = qgrad_test::world();
  std::shared_ptr<nn::Sequential> model = small_cnn(5);
  Generator gen(9);
  auto unused = std::make_shared<nn::Linear>(3, 3, gen);
  model->push_back("unused", unused);
  DistributedDataParallel ddp(model, g);
  const GlobalBatch batch = global_batch(0, 4 * g->size());
  // The forward skips the last module.
  Tensor h = qgrad_test::rank_part(batch.x);
  for (std::size_t i = 0; i < 5; ++i) h = (*model)[i]->forward(h);
  cross_entropy(h, qgrad_test::rank_part(batch.y)).backward();
  ddp.synchronize();
  CHECK_FALSE(unused->weight().grad().defined());
  CHECK(model->parameters().front().grad().defined());
  CHECK(qgrad_test::same_on_all_ranks(model->parameters().front().grad()));
}

TEST_CASE(
    "DistributedDataParallel: a second backward before synchronize() is an error; "
    "set_sync(false) accumulates locally",
    "[ddp]") {
  auto g = qgrad_test::world();
  std::shared_ptr<nn::Sequential> model = small_cnn(6);
  DistributedDataParallel ddp(model, g);
  const GlobalBatch batch = global_batch(1, 4 * g->size());
  auto loss = [&] {
    return cross_entropy(model->forward(qgrad_test::rank_part(batch.x)),
                         qgrad_test::rank_part(batch.y));
  };
  ddp.set_sync(false);
  loss().backward();
  ddp.synchronize();  // no-op: the gradients stay local
  ddp.set_sync(true);
  loss().backward();
  ddp.synchronize();
  for (const Tensor& p : model->parameters()) CHECK(qgrad_test::same_on_all_ranks(p.grad()));
  model->zero_grad();
  loss().backward();
  CHECK_THROWS_AS(loss().backward(), AutogradError);
}

TEST_CASE("DistributedDataParallel: a run repeats bit for bit at the same number of ranks",
          "[ddp]") {
  auto g = qgrad_test::world();
  auto run = [&] {
    Generator gen(21);
    std::shared_ptr<nn::Sequential> model = nn::lenet5bn(gen);
    DistributedDataParallel ddp(model, g, DataParallelOptions{0.01, true});
    optim::SGD opt(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
    for (std::int64_t step = 0; step < 4; ++step) {
      const GlobalBatch batch = global_batch(step, 8 * g->size());
      qgrad_test::ranked_step(*model, ddp, opt, batch.x, batch.y);
    }
    return model;
  };
  const std::shared_ptr<nn::Sequential> a = run(), b = run();
  CHECK(qgrad_test::differing_entries(*a, *b).empty());
}
