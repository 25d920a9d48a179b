// A GPU training step makes the host wait nowhere (part of test_gpu, Skipped without a GPU): the
// forward and backward of lenet5bn, vggfm and resnet20, the loss, gradient clipping in its tensor
// form and the SGD and Adam steps only queue work, so the host runs ahead and keeps the GPU busy.
// Counted with qgrad::host_waits (every wait for the device's stream), after warm-up steps that
// let cuDNN pick its algorithms and the allocator fill its cache. Any item(), to_vector() or copy
// to the host in the step shows up as a wait; a cudaMalloc (which host_waits does not count) as a
// change in the allocator's reserved bytes.
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/device.h"
#include "core/factory.h"
#include "nn/models/zoo.h"
#include "nn/optim/adam.h"
#include "nn/optim/sgd.h"
#include "nn/utils/clip_grad.h"
#include "ops/binary/binary.h"
#include "ops/loss/loss.h"

using namespace qgrad;

namespace {

struct Batch {
  Tensor x, y;
};

}  // namespace

TEST_CASE("cuda training step: the step, clipping and the optimisers make the host wait nowhere") {
  Generator gen(3);
  std::vector<Batch> batches;
  for (int i = 0; i < 5; ++i)
    batches.push_back({randn({32, 1, 28, 28}, gen).to(kCUDA), randint(0, 10, {32}, gen).to(kCUDA)});
  for (const std::string name : {"lenet5bn", "vggfm", "resnet20"}) {
    for (const bool adam : {false, true}) {
      INFO(name << (adam ? ", Adam" : ", SGD with momentum"));
      auto model = nn::make_model(name, 0);
      model->to(kCUDA);
      model->train();
      std::unique_ptr<optim::Optimizer> opt;
      if (adam)
        opt = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions(1e-3));
      else
        opt = std::make_unique<optim::SGD>(
            model->parameters(), optim::SGDOptions(0.05).momentum(0.9).weight_decay(5e-4));
      Tensor total = scalar_tensor(0.0, TensorOptions().device(kCUDA));
      auto step = [&](const Batch& b) {
        Tensor loss = cross_entropy(model->forward(b.x), b.y);
        opt->zero_grad();
        loss.backward();
        nn::utils::clip_grad_norm_tensor_(opt->parameters(), 1.0);
        opt->step();
        total = total + loss.detach();
      };
      step(batches[0]);  // warm-up: cuDNN's algorithm choice, the allocator's cache
      step(batches[1]);
      const std::int64_t before = host_waits(kCUDA);
      const std::size_t reserved = allocator_stats(kCUDA).reserved_bytes;
      for (int i = 2; i < 5; ++i) step(batches[i]);
      CHECK(host_waits(kCUDA) == before);
      // Every block came from the allocator's cache: no cudaMalloc (not counted as a wait) either.
      CHECK(allocator_stats(kCUDA).reserved_bytes == reserved);
      const double sum = total.item<double>();  // one read at the end: a wait, and counted
      CHECK(host_waits(kCUDA) == before + 1);
      CHECK(std::isfinite(sum));
    }
  }
}

TEST_CASE("cuda backward: pow with a scalar exponent and mse_loss make the host wait nowhere") {
  Generator gen(4);
  const Tensor x0 = rand({64, 33}, gen).to(kCUDA), t = rand({64, 33}, gen).to(kCUDA);
  const Tensor x = x0.detach().set_requires_grad(true);
  mse_loss(pow(x, 2.0) + pow(x, 0.5), t).backward();  // warm-up
  const std::int64_t before = host_waits(kCUDA);
  mse_loss(pow(x, 2.0) + pow(x, 0.5), t).backward();
  CHECK(host_waits(kCUDA) == before);
}
