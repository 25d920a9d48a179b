// Benchmark of qgrad's max_pool2d (2x2/2 and 3x3/2 pad 1) and batch_norm (float32, forward and
// forward+backward) on [128, 32, 28, 28] and [128, 64, 14, 14]; run by bench_poolbn.py, which times
// PyTorch on the same work and prints the ratios. Prints one line per measurement:
//   <op> <shape> <mode> <best milliseconds> <median milliseconds>
// Built by CMake with the library: build/bench/bench_poolbn.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "ops/batch_norm/batch_norm.h"
#include "ops/pool/pool.h"

using namespace qgrad;

namespace {

struct Timing {
  double best, median;
};

Timing time_ms(const std::function<void()>& f, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    const auto b = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double, std::milli>(b - a).count());
  }
  std::sort(t.begin(), t.end());
  return {t.front(), t[t.size() / 2]};
}

std::string shape_tag(const Shape& s) {
  std::string r;
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? "x" : "") + std::to_string(s[i]);
  return r;
}

void report(const char* op, const Shape& s, const char* mode, Timing t) {
  std::printf("%s %s %s %.4f %.4f\n", op, shape_tag(s).c_str(), mode, t.best, t.median);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 30;
  Generator gen(0);
  for (const Shape& s : {Shape{128, 32, 28, 28}, Shape{128, 64, 14, 14}}) {
    const Tensor x = randn(s, gen);
    Tensor xl = x.clone();
    xl.set_requires_grad(true);

    // max_pool2d 2x2 stride 2, and 3x3 stride 2 padding 1 (ResNet's stem).
    struct PoolCfg {
      const char* name;
      std::int64_t k, s, p;
    };
    for (const PoolCfg& c :
         {PoolCfg{"max_pool2d_k2s2", 2, 2, 0}, PoolCfg{"max_pool2d_k3s2p1", 3, 2, 1}}) {
      const std::int64_t oh = (s[2] + 2 * c.p - c.k) / c.s + 1,
                         ow = (s[3] + 2 * c.p - c.k) / c.s + 1;
      const Tensor gy_pool = randn({s[0], s[1], oh, ow}, gen);
      report(c.name, s, "fwd",
             time_ms(
                 [&] {
                   NoGradGuard ng;
                   max_pool2d(x, {c.k}, {c.s}, {c.p});
                 },
                 3, reps));
      report(c.name, s, "fwdbwd",
             time_ms(
                 [&] {
                   xl.set_grad(Tensor());
                   max_pool2d(xl, {c.k}, {c.s}, {c.p}).backward(gy_pool);
                 },
                 3, reps));
    }

    // batch_norm, training mode, affine, with running statistics.
    const Tensor gy_bn = randn(s, gen);
    Tensor w = ones({s[1]}), b = zeros({s[1]});
    w.set_requires_grad(true);
    b.set_requires_grad(true);
    Tensor rm = zeros({s[1]}), rv = ones({s[1]});
    report("batch_norm", s, "fwd",
           time_ms(
               [&] {
                 NoGradGuard ng;
                 batch_norm(x, rm, rv, w, b, true);
               },
               3, reps));
    report("batch_norm", s, "fwdbwd",
           time_ms(
               [&] {
                 xl.set_grad(Tensor());
                 w.set_grad(Tensor());
                 b.set_grad(Tensor());
                 batch_norm(xl, rm, rv, w, b, true).backward(gy_bn);
               },
               3, reps));
  }
  return 0;
}
