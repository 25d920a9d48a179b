// Weak scaling of data-parallel training: the same per-rank batch on 1 and on N ranks (run it
// under mpirun; bench_distributed.sh runs both and prints the table). Each rank trains `steps`
// SGD steps of a zoo model on synthetic batches, float or QAT (torch_ao_default, its
// observers synchronised), after warm-up steps; rank 0 prints one JSON line: images/s of the
// job, the seconds per step, and the share of the step spent waiting in synchronize() for the
// gradient all-reduce (what backward did not hide) and broadcasting the buffers.
//   mpirun -np 2 bench_distributed MODEL BATCH STEPS [qat]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/factory.h"
#include "distributed/data_parallel.h"
#include "distributed/init.h"
#include "nn/models/zoo.h"
#include "nn/optim/sgd.h"
#include "ops/loss/loss.h"
#include "quant/modules/quantize_model.h"
#include "quant/modules/synchronize_statistics.h"

using namespace qgrad;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: bench_distributed MODEL BATCH STEPS [qat]\n");
    return 2;
  }
  const std::string model_name = argv[1];
  const std::int64_t batch = std::atoll(argv[2]);
  const int steps = std::atoi(argv[3]);
  const bool qat = argc > 4 && std::string(argv[4]) == "qat";
  auto group = distributed::init_process_group();
  std::shared_ptr<nn::UnaryModule> model = nn::make_model(model_name, 0);
  if (qat) {
    quant::quantize_model(*model, quant::QuantRecipe::from_json({{"recipe", "torch_ao_default"}}));
    quant::synchronize_statistics(*model, group);
  }
  distributed::DistributedDataParallel ddp(model, group);
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01).momentum(0.9));
  Generator gen(static_cast<std::uint64_t>(group->rank()) + 1);
  const Tensor x = randn({batch, 1, 28, 28}, gen);
  const Tensor y = randint(0, 10, {batch}, gen);
  auto step = [&] {
    Tensor loss = cross_entropy(model->forward(x), y);
    opt.zero_grad();
    loss.backward();
    ddp.synchronize();
    opt.step();
  };
  for (int i = 0; i < 3; ++i) step();  // warm-up: primitive caches, first touch
  const distributed::DataParallelStats before = ddp.stats();
  group->barrier();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  group->barrier();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const distributed::DataParallelStats& after = ddp.stats();
  if (group->rank() == 0)
    std::printf(
        "{\"model\": \"%s\", \"qat\": %s, \"ranks\": %d, \"batch_per_rank\": %lld, "
        "\"images_per_s\": %.1f, \"step_ms\": %.3f, \"wait_share\": %.4f, "
        "\"broadcast_share\": %.4f, \"buckets\": %zu, \"started_in_backward\": %.3f}\n",
        model_name.c_str(), qat ? "true" : "false", group->size(), static_cast<long long>(batch),
        static_cast<double>(batch) * group->size() * steps / seconds, 1000 * seconds / steps,
        (after.wait_s - before.wait_s) / seconds,
        (after.broadcast_s - before.broadcast_s) / seconds, ddp.bucket_count(),
        after.all_reduces > before.all_reduces
            ? static_cast<double>(after.started_early - before.started_early) /
                  static_cast<double>(after.all_reduces - before.all_reduces)
            : 0.0);
  return 0;
}
