// Benchmark of the fake quantizers of every family on the CPU, through their public
// differentiable APIs: torch.ao fake_quantize_per_{tensor,channel}_affine, NVIDIA
// fake_tensor_quant, Horizon fake_quantize and AIMET quantize_dequantize, per tensor and per
// channel, forward only and forward + backward, on 16M float32 values, next to a plain copy of
// the same size measured in the same run (x.clone() and y.copy_(x) into a preallocated y).
// Two learnable forms with parameter gradients are timed too (torch.ao LSQ, AIMET range learning),
// and torch.ao's fused observer + fake quantization (fused_moving_avg_obs_fake_quant, observer and
// fake quantization on, quint8 [0, 255] per tensor affine and qint8 [-128, 127] per channel
// symmetric along axis 0, the running statistics carried over between repetitions as in training;
// it must read x twice, once for the batch min/max and once to quantize, but is counted with the
// same minimal bytes as the other rows).
//
// Built by CMake with the library (bench/CMakeLists.txt).
// Run:  OMP_NUM_THREADS=2 ./build/bench/bench_quant_families [threads] [reps]
// bench/bench_quant_families.py runs this program and the same workload in PyTorch 1.13 and
// prints one table with ratios.
//
// GB/s counts the bytes a minimal implementation must move: forward = read x + write y
// (8 bytes/element, the same as a copy); forward + backward = read x, write y, read dy, write dx
// (16 bytes/element). Each figure is the median of the repetitions (after one warm-up run).
// Every family quantizes onto the same 8-bit grid: scale 0.023 (NVIDIA: amax = 127 * 0.023),
// per-channel scales in [0.01, 0.05) for the 64 channels of axis 1.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <vector>

#include "bench/bench_timer.h"
#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "ops/binary/binary.h"
#include "ops/unary/unary.h"
#include "quant/aimet/affine_quantize.h"
#include "quant/horizon/horizon_fake_quantize.h"
#include "quant/nvidia/tensor_quant.h"
#include "quant/torch_ao/fake_quantize.h"
#include "quant/torch_ao/fused_obs_fake_quant.h"
#include "quant/torch_ao/learnable_fake_quantize.h"

using namespace qgrad;
using qgrad_bench::median_seconds;

namespace {

void report(const char* name, double seconds, double bytes) {
  qgrad_bench::report(name, seconds, bytes, 48, 9);
}

// A forward-only and a forward + backward (dx only) measurement of one fake quantizer.
void bench_pair(const char* fwd_name, const char* bwd_name,
                const std::function<Tensor(const Tensor&)>& fq, const Tensor& x, const Tensor& dy,
                int reps, double n) {
  {
    NoGradGuard ng;
    report(fwd_name, median_seconds([&] { fq(x); }, reps), 8.0 * n);
  }
  Tensor xg = x.detach().set_requires_grad(true);
  const double t = median_seconds(
      [&] {
        xg.set_grad(Tensor());
        fq(xg).backward(dy);
      },
      reps);
  report(bwd_name, t, 16.0 * n);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 9;
  if (threads < 1 || reps < 1) {
    std::fprintf(stderr, "usage: %s [threads >= 1] [reps >= 1]\n", argv[0]);
    return 2;
  }
  omp_set_num_threads(threads);
  const std::int64_t n = 16 * 1024 * 1024;
  const double nd = static_cast<double>(n);
  const Shape shape{256, 64, 1024};  // per channel along axis 1: 64 channels of 1024-element rows
  Generator gen(0);
  Tensor x = uniform(shape, -3, 3, gen);
  Tensor dy = uniform(shape, -1, 1, gen);
  const double scale = 0.023;
  Tensor scale_c = uniform({64}, 0.01, 0.05, gen);                          // [C]
  Tensor zp_c = randint(0, 256, {64}, gen, TensorOptions().dtype(kInt32));  // [C]
  Tensor scale_c1 = scale_c.reshape({64, 1});                               // broadcast form
  Tensor offset_c1 = neg(zp_c.to(kFloat32)).reshape({64, 1});               // AIMET: -zp
  Tensor amax_t = scalar_tensor(127 * scale);
  Tensor amax_c1 = mul(scale_c1, 127.0);
  Tensor scale_t1 = full({1}, scale), offset_t = full({}, -128.0), scale_t = full({}, scale);

  std::printf("qgrad quantizer families, %lld float32 values, %d threads, median of %d\n",
              static_cast<long long>(n), threads, reps);
  report("copy x.clone()", median_seconds([&] { Tensor c = x.clone(); }, reps), 8.0 * nd);
  Tensor y = empty(shape);
  report("copy y.copy_(x)", median_seconds([&] { y.copy_(x); }, reps), 8.0 * nd);

  bench_pair(
      "torch.ao per-tensor fwd", "torch.ao per-tensor fwd+bwd",
      [&](const Tensor& v) { return ao::fake_quantize_per_tensor_affine(v, scale, 128, 0, 255); },
      x, dy, reps, nd);
  bench_pair(
      "torch.ao per-channel fwd", "torch.ao per-channel fwd+bwd",
      [&](const Tensor& v) {
        return ao::fake_quantize_per_channel_affine(v, scale_c, zp_c, 1, 0, 255);
      },
      x, dy, reps, nd);
  bench_pair(
      "nvidia per-tensor fwd", "nvidia per-tensor fwd+bwd",
      [&](const Tensor& v) { return nvidia::fake_tensor_quant(v, amax_t); }, x, dy, reps, nd);
  bench_pair(
      "nvidia per-channel fwd", "nvidia per-channel fwd+bwd",
      [&](const Tensor& v) { return nvidia::fake_tensor_quant(v, amax_c1); }, x, dy, reps, nd);
  bench_pair(
      "horizon per-tensor fwd", "horizon per-tensor fwd+bwd",
      [&](const Tensor& v) { return horizon::fake_quantize(v, scale_t1); }, x, dy, reps, nd);
  bench_pair(
      "horizon per-channel fwd", "horizon per-channel fwd+bwd",
      [&](const Tensor& v) {
        return horizon::fake_quantize(v, scale_c, horizon::QDType::QInt8, 1);
      },
      x, dy, reps, nd);
  bench_pair(
      "aimet per-tensor fwd", "aimet per-tensor fwd+bwd",
      [&](const Tensor& v) { return aimet::quantize_dequantize(v, scale_t, offset_t, 0, 255); }, x,
      dy, reps, nd);
  bench_pair(
      "aimet per-channel fwd", "aimet per-channel fwd+bwd",
      [&](const Tensor& v) { return aimet::quantize_dequantize(v, scale_c1, offset_c1, 0, 255); },
      x, dy, reps, nd);

  // torch.ao's fused observer + fake quantization, with its state tensors as a module holds them.
  {
    const TensorOptions i64 = TensorOptions().dtype(kInt64);
    const TensorOptions f32 = TensorOptions().dtype(kFloat32);
    const Tensor on = ones({1}, i64);
    const float inf = std::numeric_limits<float>::infinity();
    Tensor rmin = full({1}, inf, f32), rmax = full({1}, -inf, f32);
    Tensor sc = ones({1}, f32), zp = zeros({1}, TensorOptions().dtype(kInt32));
    bench_pair(
        "torch.ao fused obs+fq per-tensor fwd", "torch.ao fused obs+fq per-tensor fwd+bwd",
        [&](const Tensor& v) {
          return ao::fused_moving_avg_obs_fake_quant(v, on, on, rmin, rmax, sc, zp, 0.01, 0, 255, 0,
                                                     false, false);
        },
        x, dy, reps, nd);
    Tensor cmin = empty({0}, f32), cmax = empty({0}, f32);
    Tensor csc = empty({0}, f32), czp = empty({0}, TensorOptions().dtype(kInt32));
    bench_pair(
        "torch.ao fused obs+fq per-channel fwd", "torch.ao fused obs+fq per-channel fwd+bwd",
        [&](const Tensor& v) {
          return ao::fused_moving_avg_obs_fake_quant(v, on, on, cmin, cmax, csc, czp, 0.01, -128,
                                                     127, 0, true, true);
        },
        x, dy, reps, nd);
  }

  // Learnable forms: the scale (and offset / zero point) receive gradients too.
  Tensor xg = x.detach().set_requires_grad(true);
  Tensor s = full({1}, scale).set_requires_grad(true);
  Tensor z = full({1}, 128.0).set_requires_grad(true);
  double t = median_seconds(
      [&] {
        xg.set_grad(Tensor());
        s.set_grad(Tensor());
        z.set_grad(Tensor());
        ao::fake_quantize_learnable_per_tensor_affine(xg, s, z, 0, 255, 1.0).backward(dy);
      },
      reps);
  report("torch.ao learnable per-tensor fwd+bwd", t, 16.0 * nd);
  Tensor sa = full({}, scale).set_requires_grad(true);
  Tensor oa = full({}, -128.0).set_requires_grad(true);
  t = median_seconds(
      [&] {
        xg.set_grad(Tensor());
        sa.set_grad(Tensor());
        oa.set_grad(Tensor());
        aimet::quantize_dequantize(xg, sa, oa, 0, 255).backward(dy);
      },
      reps);
  report("aimet range-learning per-tensor fwd+bwd", t, 16.0 * nd);
  return 0;
}
