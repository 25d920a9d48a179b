// Training throughput of the model zoo: SGD training steps (forward, cross-entropy, backward,
// momentum + weight-decay update) of lenet5bn / vggfm / resnet20 on synthetic 1x28x28 batches,
// the work bench_train.py times in PyTorch 1.13 with identical models. Run by bench_train.py
// (one process per measurement, alternating with PyTorch), or directly:
//   build/bench/bench_train <model> [--batch 128] [--steps 30] [--warmup 5] [--threads 2]
//                           [--device cpu|cuda|cuda:N] [--qat torch_ao]
// --qat <family> quantizes the model first as `qgrad train` does with {"family": <family>} and no
// other key (quant::quantize_model with the family's default recipe; torch_ao: PyTorch 1.13's
// get_default_qat_qconfig("fbgemm"), a FusedMovingAvgObsFakeQuantize on the input and the
// per-channel weight of every Conv2d and Linear, no batch-norm fusion), with no calibration
// batches (the torch_ao default), so every timed step observes and fake-quantizes.
// Prints one line: <model> <batch> <images per second> <peak RSS MiB (VmHWM)>, and on a GPU a
// fifth field: the peak MiB held by tensors on it (the caching allocator's peak_bytes; cached
// free blocks not counted, as torch.cuda.max_memory_allocated). bench_gpu.py runs it on CUDA.
// --compare-qat <family> instead times the float model and its QAT twin (as --qat builds it) in
// one process, one step of each in turn, and prints <model> <batch>, the median milliseconds per
// step of both and their ratio (QAT / float), then the same for the tenth percentile: load from
// other processes disturbs both alike, and these statistics ignore the steps it stretched.
// Built by CMake with the library: build/bench/bench_train.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench/peak_rss.h"
#include "core/allocator.h"
#include "core/device.h"
#include "core/factory.h"
#include "core/generator.h"
#include "nn/models/zoo.h"
#include "nn/optim/sgd.h"
#include "ops/loss/loss.h"
#include "quant/modules/quantize_model.h"

using namespace qgrad;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: bench_train <model> [--batch N] [--steps N] [--warmup N] [--threads N] "
                 "[--device D] [--qat FAMILY | --compare-qat FAMILY]\n");
    return 2;
  }
  const std::string model_name = argv[1];
  std::int64_t batch = 128, steps = 30, warmup = 5, threads = 0;
  Device device = kCPU;
  std::string qat, compare_qat;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const std::int64_t v = std::atoll(argv[i + 1]);
    if (k == "--device")
      device = Device::parse(argv[i + 1]);
    else if (k == "--qat")
      qat = argv[i + 1];
    else if (k == "--compare-qat")
      compare_qat = argv[i + 1];
    else if (k == "--batch")
      batch = v;
    else if (k == "--steps")
      steps = v;
    else if (k == "--warmup")
      warmup = v;
    else if (k == "--threads")
      threads = v;
    else {
      std::fprintf(stderr, "bench_train: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (threads > 0) omp_set_num_threads(static_cast<int>(threads));

  // A pool of synthetic batches (normalised-looking images, uniform labels), cycled through.
  Generator gen(0);
  constexpr int kPool = 4;
  std::vector<Tensor> xs, ys;
  for (int i = 0; i < kPool; ++i) {
    xs.push_back(randn({batch, 1, 28, 28}, gen).to(device));
    ys.push_back(randint(0, 10, {batch}, gen).to(device));
  }
  // One model with its optimiser and step; the QAT twin (--compare-qat) starts from the same
  // weights.
  struct Trainee {
    std::shared_ptr<nn::UnaryModule> model;
    std::unique_ptr<optim::SGD> sgd;
  };
  auto make_trainee = [&](const std::string& family) {
    Trainee t;
    t.model = nn::make_model(model_name, 0);
    if (!family.empty()) quant::quantize_model(*t.model, nlohmann::json{{"family", family}});
    t.model->to(device);
    t.model->train();
    t.sgd = std::make_unique<optim::SGD>(t.model->parameters(),
                                         optim::SGDOptions(0.01).momentum(0.9).weight_decay(5e-4));
    return t;
  };
  auto step = [&](Trainee& t, int i) {
    Tensor loss = cross_entropy(t.model->forward(xs[i % kPool]), ys[i % kPool]);
    t.sgd->zero_grad();
    loss.backward();
    t.sgd->step();
  };
  if (!compare_qat.empty()) {
    Trainee f = make_trainee(""), q = make_trainee(compare_qat);
    for (int i = 0; i < warmup; ++i) {
      step(f, i);
      step(q, i);
    }
    std::vector<double> tf, tq;
    auto timed = [&](Trainee& t, int i) {
      synchronize(device);
      const auto a = std::chrono::steady_clock::now();
      step(t, i);
      synchronize(device);
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
    };
    for (int i = 0; i < steps; ++i) {
      // Alternating which goes first, so neither always follows the other.
      if (i % 2 == 0) {
        tf.push_back(timed(f, i));
        tq.push_back(timed(q, i));
      } else {
        tq.push_back(timed(q, i));
        tf.push_back(timed(f, i));
      }
    }
    // The median step, and the tenth percentile: the steps that other processes disturbed least.
    auto quantile = [](std::vector<double> v, double q) {
      std::sort(v.begin(), v.end());
      return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
    };
    const double mf = quantile(tf, 0.5), mq = quantile(tq, 0.5);
    const double ff = quantile(tf, 0.1), fq = quantile(tq, 0.1);
    std::printf(
        "%s %lld float %.3f ms qat %.3f ms ratio %.3f p10 float %.3f ms qat %.3f ms ratio %.3f\n",
        model_name.c_str(), static_cast<long long>(batch), mf * 1e3, mq * 1e3, mq / mf, ff * 1e3,
        fq * 1e3, fq / ff);
    return 0;
  }
  Trainee t = make_trainee(qat);
  for (int i = 0; i < warmup; ++i) step(t, i);
  synchronize(device);  // the clock starts with the GPU idle and stops once it has finished
  if (device.is_cuda()) reset_peak_bytes(device);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step(t, i);
  synchronize(device);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s %lld %.1f %.1f", model_name.c_str(), static_cast<long long>(batch),
              static_cast<double>(steps * batch) / s, qgrad_bench::peak_rss_mib());
  if (device.is_cuda())
    std::printf(" %.1f", static_cast<double>(allocator_stats(device).peak_bytes) / (1 << 20));
  std::printf("\n");
  return 0;
}
