// Per-call cost of the small element-wise calls a training step of a small model makes: torch.ao's
// fused observer + fake quantization (forward with its packed gradient mask, and its masked
// backward), and the float element-wise ops (relu, add, mul, relu's backward), on lenet5bn's
// activation sizes at batch 128 and on tiny tensors, on 1 and 2 threads, next to the cost of one
// empty parallel region (parallel_for over two items). Each figure is the median over rounds of
// the mean time of a batch of calls; the thread counts alternate round by round so that load from
// other processes disturbs both alike. The 2-thread / 1-thread ratio shows what splitting a call
// across threads gains or loses at each size (the parallel threshold, kParallelGrain, should sit
// where it crosses 1). A second table times a plain
// row loop serially and split by one parallel region at sizes 2^11..2^18, the crossover the
// threshold is chosen from. Usage: build/bench/bench_call_overhead [rounds (default 15)]
// [calls|crossover (one table only)].
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "core/generator.h"
#include "core/strided_loop.h"
#include "ops/binary/binary.h"
#include "ops/unary/unary.h"
#include "quant/torch_ao/fused_obs_fake_quant.h"
#include "quant/torch_ao/fused_obs_fake_quant_kernels.h"
#include "quant/torch_ao/fused_obs_fake_quant_math.h"
#include "quant/value_mask_loop.h"

using namespace qgrad;

namespace {

// Mean seconds per call of `calls` back-to-back calls.
double batch_mean(const std::function<void()>& f, std::int64_t calls) {
  const auto a = std::chrono::steady_clock::now();
  for (std::int64_t i = 0; i < calls; ++i) f();
  const auto b = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(b - a).count() / static_cast<double>(calls);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Case {
  std::string name;
  std::function<void()> f;
};

// The fused observer's state for one per-tensor activation quantizer (quint8, as the default
// fbgemm QAT qconfig), observing and fake quantizing on every call.
struct FusedState {
  Tensor on = full({1}, 1.0, TensorOptions().dtype(kInt64));
  Tensor rmin = full({1}, 0.0), rmax = full({1}, 0.0), scale = full({1}, 1.0);
  Tensor zp = zeros({1}, TensorOptions().dtype(kInt32));
  Tensor call(const Tensor& x) const {
    return ao::fused_moving_avg_obs_fake_quant(x, on, on, rmin, rmax, scale, zp, 0.01, 0, 255, -1,
                                               false, false);
  }
};

// A float relu row, as cpu::map runs it.
QGRAD_NOINLINE void relu_row(const float* __restrict__ x, float* __restrict__ y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

// The crossover the parallel threshold is chosen from: a row loop over n elements on 2 threads,
// run serially (one call) or split by parallel_for (one parallel region), alternating round by
// round; below the size where the split stops winning a call should not start a region.
void crossover(int rounds) {
  omp_set_num_threads(2);
  const std::int64_t max_n = std::int64_t{1} << 18;
  Generator gen(1);
  const Tensor x = randn({max_n}, gen), y = empty({max_n});
  const Tensor m = empty({max_n}, TensorOptions().dtype(kUInt8));
  const float* px = x.data_ptr<float>();
  float* py = y.data_ptr<float>();
  std::uint8_t* pm = m.data_ptr<std::uint8_t>();
  const auto elem = ao::fused::make_fake_quant_elem(0.02f, 128, 0, 255);
  std::printf(
      "\n2 threads, one row loop of n elements: serial vs split by one parallel region "
      "(microseconds, median of %d rounds)\n",
      rounds);
  std::printf("%-10s %12s %12s %8s %12s %12s %8s\n", "n", "relu serial", "relu split", "ratio",
              "fq serial", "fq split", "ratio");
  for (std::int64_t n = 2048; n <= max_n; n *= 2) {
    const auto relu_with = [&](std::int64_t grain) {
      return [&, grain] {
        parallel_for(n, grain,
                     [&](std::int64_t b, std::int64_t e) { relu_row(px + b, py + b, e - b); });
      };
    };
    const auto fq_with = [&](std::int64_t grain) {
      return [&, grain] {
        parallel_for(n, grain, [&](std::int64_t b, std::int64_t e) {
          quant::value_mask_row(elem, px + b, py + b, pm + b, e - b);
        });
      };
    };
    const std::int64_t calls = std::max<std::int64_t>(20, (std::int64_t{1} << 22) / n);
    std::vector<double> rs, rp, fs, fp;
    for (int r = 0; r < rounds; ++r) {
      rs.push_back(batch_mean(relu_with(n + 1), calls));
      rp.push_back(batch_mean(relu_with(1), calls));
      fs.push_back(batch_mean(fq_with(n + 1), calls));
      fp.push_back(batch_mean(fq_with(1), calls));
    }
    const double a = median(rs), b = median(rp), c = median(fs), d = median(fp);
    std::printf("%-10lld %12.2f %12.2f %8.2f %12.2f %12.2f %8.2f\n", static_cast<long long>(n),
                a * 1e6, b * 1e6, b / a, c * 1e6, d * 1e6, d / c);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 15;
  const std::string only = argc > 2 ? argv[2] : "";
  const std::vector<Shape> shapes{
      {128, 6, 24, 24}, {128, 6, 12, 12}, {128, 16, 8, 8}, {128, 256}, {128, 120}, {128, 84},
      {65536},          {16384},          {4096},          {512},      {64},       {1}};
  Generator gen(0);
  FusedState state;
  const char* op = "bench_call_overhead";
  std::vector<Case> cases;
  cases.push_back(
      {"empty parallel region", [] { parallel_for(2, 1, [](std::int64_t, std::int64_t) {}); }});
  // The tensors are created once per shape and captured by value (handles).
  for (const Shape& s : shapes) {
    std::string dims;
    for (std::size_t d = 0; d < s.size(); ++d) dims += (d ? "x" : "") + std::to_string(s[d]);
    const Tensor a = randn(s, gen), b = randn(s, gen), g = randn(s, gen), out = empty(s);
    const Tensor y = relu(a);
    const Tensor xg = a.detach().set_requires_grad(true);
    const Tensor bits = empty({(a.numel() + 7) / 8}, TensorOptions().dtype(kUInt8));
    {
      // Fill the mask as a forward would.
      auto& k = kernel_table(ao::kFusedObsFakeQuantKernels)(op, a);
      ao::FusedObsFakeQuantParams p;
      p.quant_min = 0;
      p.quant_max = 255;
      p.averaging_const = 0.01f;
      ao::FusedObsFakeQuantState st{state.on,   state.on,    state.rmin,
                                    state.rmax, state.scale, state.zp};
      k(a, p, st, out, bits);
    }
    auto& masked = kernel_table(ao::kMaskedGradientBitsKernels)(op, a);
    cases.push_back({"fused obs+fq forward " + dims, [state, xg] { state.call(xg); }});
    cases.push_back({"fused obs+fq fwd+bwd " + dims, [state, xg, g] {
                       xg.set_grad(Tensor());
                       state.call(xg).backward(g);
                     }});
    cases.push_back(
        {"kernel masked bits bwd " + dims, [&masked, g, bits, out] { masked(g, bits, out); }});
    cases.push_back({"relu " + dims, [a] {
                       NoGradGuard ng;
                       relu(a);
                     }});
    cases.push_back({"add " + dims, [a, b] {
                       NoGradGuard ng;
                       add(a, b);
                     }});
    cases.push_back({"mul " + dims, [a, b] {
                       NoGradGuard ng;
                       mul(a, b);
                     }});
    cases.push_back({"relu backward kernel " + dims,
                     [g, a, y, out] { unary_backward_kernel(UnaryOp::Relu, g, a, y, out); }});
  }
  if (only != "crossover") {
    std::printf("per-call microseconds, median of %d rounds (threads alternate each round)\n",
                rounds);
    std::printf("%-44s %10s %10s %8s\n", "call", "1 thread", "2 threads", "2t/1t");
    for (const Case& c : cases) {
      // Calls per batch: about 2 ms of work on one thread.
      omp_set_num_threads(1);
      const double one = batch_mean(c.f, 5);
      const std::int64_t calls = std::max<std::int64_t>(5, static_cast<std::int64_t>(2e-3 / one));
      std::vector<double> t1, t2;
      for (int r = 0; r < rounds; ++r) {
        omp_set_num_threads(1);
        t1.push_back(batch_mean(c.f, calls));
        omp_set_num_threads(2);
        t2.push_back(batch_mean(c.f, calls));
      }
      const double m1 = median(t1), m2 = median(t2);
      std::printf("%-44s %10.2f %10.2f %8.2f\n", c.name.c_str(), m1 * 1e6, m2 * 1e6, m2 / m1);
      std::fflush(stdout);
    }
  }
  if (only != "calls") crossover(rounds);
  return 0;
}
