// Benchmark of conv2d forward + backward (input, weight and bias gradients) on the layers of the
// VGG-ish Fashion-MNIST CNN at batch 128, on a fixed number of threads. Prints one line per
// layer with the median and minimum time of a training step (forward + backward) and of an
// inference forward, in milliseconds. bench/bench_conv.py runs it next to PyTorch.
//
//   bench_conv [--threads 2] [--iters 20] [--warmup 5] [--batch 128]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "ops/binary/binary.h"
#include "ops/conv/conv.h"

using namespace qgrad;

namespace {

struct Layer {
  std::int64_t c, o, hw;
};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::pair<double, double> median_min(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front()};
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, iters = 20, warmup = 5;
  std::int64_t batch = 128;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads"))
      threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--iters"))
      iters = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--warmup"))
      warmup = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--batch"))
      batch = std::atoll(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  omp_set_num_threads(threads);
  const Layer layers[] = {{1, 32, 28}, {32, 32, 28}, {32, 64, 14}, {64, 64, 14}};
  Generator gen(0);
  std::printf("# qgrad conv2d k3 p1, batch %lld, %d threads\n", static_cast<long long>(batch),
              threads);
  std::printf("%-16s %12s %12s %12s %12s\n", "layer", "step_med_ms", "step_min_ms", "fwd_med_ms",
              "fwd_min_ms");
  for (const Layer& L : layers) {
    // The first layer sees the data, which needs no gradient.
    Tensor x = randn({batch, L.c, L.hw, L.hw}, gen).set_requires_grad(L.c != 1);
    Tensor w = (randn({L.o, L.c, 3, 3}, gen) * 0.1).detach().set_requires_grad();
    Tensor b = randn({L.o}, gen).set_requires_grad();
    Tensor gy = randn({batch, L.o, L.hw, L.hw}, gen);
    auto step = [&] {
      Tensor y = conv2d(x, w, b, {1}, {1});
      y.backward(gy);
      x.set_grad(Tensor());
      w.set_grad(Tensor());
      b.set_grad(Tensor());
    };
    auto fwd = [&] {
      NoGradGuard no_grad;
      Tensor y = conv2d(x, w, b, {1}, {1});
    };
    for (int i = 0; i < warmup; ++i) step(), fwd();
    std::vector<double> ts, tf;
    for (int i = 0; i < iters; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      step();
      ts.push_back(ms_since(t0));
    }
    for (int i = 0; i < iters; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      fwd();
      tf.push_back(ms_since(t0));
    }
    auto [sm, sn] = median_min(ts);
    auto [fm, fn] = median_min(tf);
    char name[32];
    std::snprintf(name, sizeof name, "%lld->%lld@%lld", static_cast<long long>(L.c),
                  static_cast<long long>(L.o), static_cast<long long>(L.hw));
    std::printf("%-16s %12.3f %12.3f %12.3f %12.3f\n", name, sm, sn, fm, fn);
  }
  return 0;
}
