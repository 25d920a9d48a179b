// Benchmark of conv2d forward + backward (input, weight and bias gradients) on the layers of the
// VGG-ish Fashion-MNIST CNN (kernel 3, padding 1) and of LeNet-5 (kernel 5) at batch 128, on a
// fixed number of threads; as a server, any layer (strided, grouped: bench/bench_depthwise.py
// times MobileNetV2's depthwise convolutions through it).
// A step is forward then backward of a fixed upstream gradient; the first layer's input is the
// data and needs no gradient. Prints, per layer, the median and minimum time in milliseconds of
// a step and of an inference forward (no grad), and the median process CPU time of each.
// bench/bench_conv.py runs it next to PyTorch.
//
//   bench_conv [--threads 2] [--iters 20] [--warmup 5] [--batch 128]
//   bench_conv --serve [--threads 2] [--batch 128]   reads "c o hw k pad iters warmup [stride
//                                                    groups]" lines on stdin, answers each with
//                                                    one result line
#include <omp.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "ops/binary/binary.h"
#include "ops/conv/conv.h"

using namespace qgrad;

namespace {

struct Timing {
  double step_med, step_min, fwd_med, fwd_min, step_cpu, fwd_cpu;
};

// CPU time of the whole process (all threads), in ms: on a shared machine it moves less than
// wall time (a descheduled thread is not charged), given OMP_WAIT_POLICY=passive so that
// threads waiting at a barrier sleep instead of spinning.
double cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

Timing time_layer(std::int64_t batch, std::int64_t c, std::int64_t o, std::int64_t hw,
                  std::int64_t k, std::int64_t pad, int iters, int warmup, std::int64_t stride = 1,
                  std::int64_t groups = 1) {
  Generator gen(0);
  Tensor x = randn({batch, c, hw, hw}, gen).set_requires_grad(c != 1);
  Tensor w = (randn({o, c / groups, k, k}, gen) * 0.1).detach().set_requires_grad();
  Tensor b = randn({o}, gen).set_requires_grad();
  const std::int64_t ohw = (hw + 2 * pad - k) / stride + 1;
  Tensor gy = randn({batch, o, ohw, ohw}, gen);
  auto step = [&] {
    Tensor y = conv2d(x, w, b, {stride}, {pad}, {1}, groups);
    y.backward(gy);
    x.set_grad(Tensor());
    w.set_grad(Tensor());
    b.set_grad(Tensor());
  };
  auto fwd = [&] {
    NoGradGuard no_grad;
    Tensor y = conv2d(x, w, b, {stride}, {pad}, {1}, groups);
  };
  for (int i = 0; i < warmup; ++i) step(), fwd();
  std::vector<double> ts, tf, cs, cf;
  for (int i = 0; i < iters; ++i) {
    const double c0 = cpu_ms();
    auto t0 = std::chrono::steady_clock::now();
    step();
    ts.push_back(ms_since(t0));
    cs.push_back(cpu_ms() - c0);
  }
  for (int i = 0; i < iters; ++i) {
    const double c0 = cpu_ms();
    auto t0 = std::chrono::steady_clock::now();
    fwd();
    tf.push_back(ms_since(t0));
    cf.push_back(cpu_ms() - c0);
  }
  for (auto* v : {&ts, &tf, &cs, &cf}) std::sort(v->begin(), v->end());
  const std::size_t m = ts.size() / 2;
  return {ts[m], ts.front(), tf[m], tf.front(), cs[m], cf[m]};
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, iters = 20, warmup = 5;
  std::int64_t batch = 128;
  bool serve = false;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--serve")) {
      serve = true;
    } else if (!std::strcmp(argv[i], "--threads") && has_value) {
      threads = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--iters") && has_value) {
      iters = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--warmup") && has_value) {
      warmup = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--batch") && has_value) {
      batch = std::atoll(argv[++i]);
    } else {
      std::fprintf(stderr, "bench_conv: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (iters < 1 || threads < 1 || batch < 1) {
    std::fprintf(stderr, "bench_conv: --iters, --threads and --batch must be >= 1\n");
    return 2;
  }
  omp_set_num_threads(threads);
  if (serve) {
    std::string line;
    while (std::getline(std::cin, line)) {
      std::istringstream in(line);
      std::int64_t c, o, hw, k, pad, stride = 1, groups = 1;
      int it, wu;
      if (!(in >> c >> o >> hw >> k >> pad >> it >> wu)) break;
      in >> stride >> groups;
      const Timing t = time_layer(batch, c, o, hw, k, pad, std::max(it, 1), wu, stride, groups);
      std::printf("%.4f %.4f %.4f %.4f %.4f %.4f\n", t.step_med, t.step_min, t.fwd_med, t.fwd_min,
                  t.step_cpu, t.fwd_cpu);
      std::fflush(stdout);
    }
    return 0;
  }
  // {in, out, size, kernel, padding}: the VGG-ish CNN's 3x3 layers, then LeNet-5's two 5x5.
  const std::int64_t layers[][5] = {{1, 32, 28, 3, 1},  {32, 32, 28, 3, 1}, {32, 64, 14, 3, 1},
                                    {64, 64, 14, 3, 1}, {1, 6, 28, 5, 2},   {6, 16, 14, 5, 0}};
  std::printf("# qgrad conv2d, batch %lld, %d threads, ms\n", static_cast<long long>(batch),
              threads);
  std::printf("%-14s %10s %10s %10s %10s %10s %10s\n", "layer", "step_med", "step_min", "fwd_med",
              "fwd_min", "step_cpu", "fwd_cpu");
  for (const auto& L : layers) {
    const Timing t = time_layer(batch, L[0], L[1], L[2], L[3], L[4], iters, warmup);
    const std::string name = std::to_string(L[0]) + "->" + std::to_string(L[1]) + "k" +
                             std::to_string(L[3]) + "@" + std::to_string(L[2]);
    std::printf("%-14s %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f\n", name.c_str(), t.step_med,
                t.step_min, t.fwd_med, t.fwd_min, t.step_cpu, t.fwd_cpu);
  }
  return 0;
}
