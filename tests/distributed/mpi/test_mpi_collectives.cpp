// The process group's collectives on 2+ ranks: every reduction, dtype, NaN propagation,
// broadcast, all-gather, the asynchronous all-reduce, and the bad-input errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "core/factory.h"
#include "mpi_test_support.h"

using namespace qgrad;
using distributed::ReduceOp;

TEST_CASE("all_reduce sums, and takes minima and maxima, in every dtype", "[collectives]") {
  auto g = qgrad_test::world();
  const int n = g->size(), r = g->rank();
  const double rr = r;
  for (DType d : {kFloat32, kFloat64, kInt32, kInt64}) {
    Tensor s = from_vector<double>({rr, 10 + rr, -rr}).to(d);
    Tensor mn = s.clone(), mx = s.clone();
    g->all_reduce(s, ReduceOp::Sum);
    g->all_reduce(mn, ReduceOp::Min);
    g->all_reduce(mx, ReduceOp::Max);
    const double sum_r = n * (n - 1) / 2.0;
    CHECK(s.to_vector<double>() == std::vector<double>{sum_r, 10.0 * n + sum_r, -sum_r});
    CHECK(mn.to_vector<double>() == std::vector<double>{0, 10, -(n - 1.0)});
    CHECK(mx.to_vector<double>() == std::vector<double>{n - 1.0, 10 + n - 1.0, 0});
  }
}

TEST_CASE("all_reduce min and max propagate NaN from any rank, as torch.min/max", "[collectives]") {
  auto g = qgrad_test::world();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Column 0: NaN on rank 0 only; column 1: NaN on the last rank only; column 2: none.
  const bool first = g->rank() == 0, last = g->rank() == g->size() - 1;
  Tensor mn = from_vector<float>({first ? nan : 1.0f, last ? nan : 2.0f, float(g->rank())});
  Tensor mx = mn.clone();
  g->all_reduce(mn, ReduceOp::Min);
  g->all_reduce(mx, ReduceOp::Max);
  const std::vector<float> a = mn.to_vector<float>(), b = mx.to_vector<float>();
  CHECK(std::isnan(a[0]));
  CHECK(std::isnan(a[1]));
  CHECK(a[2] == 0);
  CHECK(std::isnan(b[0]));
  CHECK(std::isnan(b[1]));
  CHECK(b[2] == g->size() - 1);
  CHECK(qgrad_test::same_on_all_ranks(mn));
}

TEST_CASE("broadcast copies the root's tensor, all_gather returns every rank's", "[collectives]") {
  auto g = qgrad_test::world();
  Tensor t = full({2, 3}, 100.0 + g->rank());
  g->broadcast(t, 0);
  CHECK(t.to_vector<float>() == std::vector<float>(6, 100.0f));
  Tensor u = full({2}, static_cast<double>(g->rank()), TensorOptions().dtype(kInt64));
  g->broadcast(u, g->size() - 1);
  CHECK(u.to_vector<std::int64_t>() == std::vector<std::int64_t>(2, g->size() - 1));
  const std::vector<Tensor> all = g->all_gather(full({3}, 7.0 * g->rank()));
  REQUIRE(all.size() == static_cast<std::size_t>(g->size()));
  for (int r = 0; r < g->size(); ++r) {
    CHECK(all[static_cast<std::size_t>(r)].shape() == Shape{3});
    CHECK(all[static_cast<std::size_t>(r)].to_vector<float>() == std::vector<float>(3, 7.0f * r));
  }
  g->barrier();
}

TEST_CASE("all_reduce_async completes in wait(), a large buffer and an empty one",
          "[collectives]") {
  auto g = qgrad_test::world();
  Tensor big = full({1 << 20}, 1.0);
  Tensor none = empty({0});
  auto w1 = g->all_reduce_async(big, ReduceOp::Sum);
  auto w2 = g->all_reduce_async(none, ReduceOp::Sum);
  while (!w2->test()) {
  }
  w1->wait();
  w1->wait();  // a second wait is a no-op
  const std::vector<float> v = big.to_vector<float>();
  CHECK(v.front() == g->size());
  CHECK(v.back() == g->size());
}

TEST_CASE("collectives refuse non-contiguous and unsupported tensors", "[collectives]") {
  auto g = qgrad_test::world();
  Tensor t = zeros({3, 4}).t();
  CHECK_THROWS_AS(g->all_reduce(t, ReduceOp::Sum), ValueError);
  CHECK_THROWS_AS(g->broadcast(t, 0), ValueError);
  Tensor b = zeros({3}, TensorOptions().dtype(kUInt8));
  CHECK_THROWS_AS(g->all_reduce(b, ReduceOp::Sum), DTypeError);
  Tensor ok = zeros({3});
  CHECK_THROWS_AS(g->broadcast(ok, g->size()), ValueError);
  Tensor undefined;
  CHECK_THROWS_AS(g->all_reduce(undefined, ReduceOp::Max), ValueError);
}

TEST_CASE(
    "collectives on GPU tensors, staged through pinned host memory (2 ranks may share one "
    "GPU)",
    "[collectives]") {
  auto g = qgrad_test::world();
  // The same answer on every rank of one machine, so all ranks skip or run together.
  if (!cuda_is_available()) {
    WARN("no CUDA device: the GPU collectives did not run");
    return;
  }
  const Device gpu = Device::parse("cuda:" + std::to_string(g->rank() % cuda_device_count()));
  Tensor s = full({1000}, 1.0 + g->rank()).to(gpu);
  g->all_reduce(s, ReduceOp::Sum);
  CHECK(s.device() == gpu);
  const double expected = g->size() + g->size() * (g->size() - 1) / 2.0;
  CHECK(s.to(kCPU).to_vector<float>() == std::vector<float>(1000, static_cast<float>(expected)));
  Tensor m = full({3}, static_cast<double>(g->rank())).to(gpu);
  g->all_reduce_async(m, ReduceOp::Max)->wait();
  CHECK(m.to(kCPU).to_vector<float>() == std::vector<float>(3, static_cast<float>(g->size() - 1)));
  Tensor b = full({4}, 10.0 * g->rank(), TensorOptions().dtype(kInt64)).to(gpu);
  g->broadcast(b, 0);
  CHECK(b.to(kCPU).to_vector<std::int64_t>() == std::vector<std::int64_t>(4, 0));
  const std::vector<Tensor> all = g->all_gather(full({2}, 1.0 * g->rank()).to(gpu));
  REQUIRE(all.size() == static_cast<std::size_t>(g->size()));
  CHECK(all.back().device() == gpu);
  CHECK(all.back().to(kCPU).to_vector<float>() == std::vector<float>(2, g->size() - 1.0f));
}
