// The world of one process: init_process_group without mpirun, collectives that leave their
// tensors as they are, and DistributedDataParallel that then changes nothing. (The collectives
// on several ranks are tests/distributed/mpi, run through mpirun.)
#include <catch2/catch.hpp>

#include <cstdlib>

#include "core/factory.h"
#include "distributed/data_parallel.h"
#include "distributed/init.h"
#include "distributed/single_process_group.h"
#include "nn/models/zoo.h"
#include "ops/loss/loss.h"

using namespace qgrad;
using namespace qgrad::distributed;

TEST_CASE("distributed: a process started on its own is rank 0 of a world of one") {
  if (launched_by_mpi()) return;  // started by mpirun: test_mpi covers that
  std::shared_ptr<ProcessGroup> g = init_process_group();
  CHECK(g->rank() == 0);
  CHECK(g->size() == 1);
  CHECK(g->backend() == "single");
  CHECK(init_process_group() == g);  // one world per process, cached while alive
  CHECK(launched_world_size() == 1);
  abort_job(1);  // not an MPI job: returns
}

TEST_CASE("distributed: the collectives of one rank leave the tensors as they are") {
  SingleProcessGroup g;
  Tensor t = from_vector<float>({1, -2, 3});
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max}) {
    g.all_reduce(t, op);
    CHECK(t.to_vector<float>() == std::vector<float>{1, -2, 3});
  }
  g.all_reduce_async(t, ReduceOp::Sum)->wait();
  g.broadcast(t, 0);
  const std::vector<Tensor> all = g.all_gather(t);
  REQUIRE(all.size() == 1);
  CHECK(all[0].to_vector<float>() == std::vector<float>{1, -2, 3});
  CHECK_FALSE(all[0].is_same(t));
  g.barrier();
  CHECK_THROWS_AS(g.broadcast(t, 1), ValueError);
  Tensor strided = zeros({2, 3}).t();
  CHECK_THROWS_WITH(g.all_reduce(strided, ReduceOp::Sum), Catch::Contains("contiguous"));
  CHECK(std::string(reduce_op_name(ReduceOp::Max)) == "max");
}

TEST_CASE("distributed: DistributedDataParallel on one rank changes neither state nor gradients") {
  auto model = nn::make_model("lenet5bn", 3);
  auto g = std::make_shared<SingleProcessGroup>();
  const TensorDict before = model->state_dict();
  DistributedDataParallel ddp(model, g);
  CHECK(ddp.bucket_count() == 0);
  Generator gen(4);
  cross_entropy(model->forward(randn({4, 1, 28, 28}, gen)), randint(0, 10, {4}, gen)).backward();
  const std::vector<float> grad = model->parameters().front().grad().to_vector<float>();
  ddp.synchronize();
  CHECK(model->parameters().front().grad().to_vector<float>() == grad);
  CHECK_THROWS_AS(DistributedDataParallel(model, g, DataParallelOptions{0.0, true}), ValueError);
  CHECK_THROWS_AS(DistributedDataParallel(nullptr, g), ValueError);
}

TEST_CASE("distributed: a process on its own is a world of one whatever the back end") {
  if (launched_by_mpi()) return;
  CHECK(init_process_group(Backend::Nccl)->size() == 1);
  CHECK(init_process_group(Backend::Mpi)->backend() == "single");
#ifdef QGRAD_WITH_CUDA
  (void)nccl_available();  // true in builds that found NCCL
#else
  CHECK_FALSE(nccl_available());
#endif
}
