// Benchmark of qgrad's torch.ao fake quantization on the CPU: GB/s of per-tensor and per-channel
// fake quantization, forward only and forward + backward, on 16M float32 values, next to a plain
// tensor copy (x.clone()) measured in the same run. Compare with bench/bench_fake_quant.py
// (PyTorch's torch.fake_quantize_per_*_affine at the same sizes and thread count).
//
// Built by CMake with the library (bench/CMakeLists.txt).
// Run:  OMP_NUM_THREADS=2 ./build/bench/bench_fake_quant
//
// GB/s counts the bytes a minimal implementation must move: forward = read x + write y
// (8 bytes/element, the same as a copy); forward + backward = read x, write y, read dy, write dx
// (16 bytes/element). Each figure is the median of the repetitions. The "kernel" lines run the raw
// CPU kernels (taken from their "torch_ao.*" kernel tables) into preallocated buffers (no
// allocation, page faults or autograd), next to a copy into a preallocated buffer (y.copy_(x));
// the mask written by the forward (1 byte/element) and read by the backward is not counted.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "bench/bench_timer.h"
#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "quant/torch_ao/fake_quantize.h"
#include "quant/torch_ao/fake_quantize_kernels.h"
#include "quant/torch_ao/learnable_fake_quantize.h"

using namespace qgrad;
using qgrad_bench::median_seconds;

namespace {

void report(const char* name, double seconds, double bytes) {
  qgrad_bench::report(name, seconds, bytes, 44, 8);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 15;
  omp_set_num_threads(threads);
  const std::int64_t n = 16 * 1024 * 1024;
  const Shape shape{256, 64, 1024};  // per-channel along axis 1: 64 channels of 1024-element rows
  Generator gen(0);
  Tensor x = uniform(shape, -3, 3, gen);
  Tensor dy = uniform(shape, -1, 1, gen);
  Tensor scale_c = uniform({64}, 0.01, 0.05, gen);
  Tensor zp_c = randint(0, 256, {64}, gen, TensorOptions().dtype(kInt32));
  const double b_fwd = 8.0 * n, b_bwd = 16.0 * n;
  std::printf("qgrad fake quantization, %lld float32 values, %d threads, median of %d\n",
              static_cast<long long>(n), threads, reps);

  double t = median_seconds([&] { Tensor c = x.clone(); }, reps);
  report("copy x.clone()", t, b_fwd);
  {
    NoGradGuard ng;
    t = median_seconds([&] { ao::fake_quantize_per_tensor_affine(x, 0.023, 128, 0, 255); }, reps);
    report("per-tensor forward", t, b_fwd);
    t = median_seconds([&] { ao::fake_quantize_per_channel_affine(x, scale_c, zp_c, 1, 0, 255); },
                       reps);
    report("per-channel forward", t, b_fwd);
  }
  Tensor xg = x.detach().set_requires_grad(true);
  t = median_seconds(
      [&] {
        xg.set_grad(Tensor());
        Tensor y = ao::fake_quantize_per_tensor_affine(xg, 0.023, 128, 0, 255);
        y.backward(dy);
      },
      reps);
  report("per-tensor forward + backward", t, b_bwd);
  t = median_seconds(
      [&] {
        xg.set_grad(Tensor());
        Tensor y = ao::fake_quantize_per_channel_affine(xg, scale_c, zp_c, 1, 0, 255);
        y.backward(dy);
      },
      reps);
  report("per-channel forward + backward", t, b_bwd);
  Tensor s = full({1}, 0.023).set_requires_grad(true);
  Tensor z = full({1}, 128.0).set_requires_grad(true);
  t = median_seconds(
      [&] {
        xg.set_grad(Tensor());
        s.set_grad(Tensor());
        z.set_grad(Tensor());
        Tensor y = ao::fake_quantize_learnable_per_tensor_affine(xg, s, z, 0, 255, 1.0);
        y.backward(dy);
      },
      reps);
  report("learnable per-tensor forward + backward", t, b_bwd);

  // Raw CPU kernels into preallocated outputs.
  const char* op = "bench_fake_quant";
  auto& per_tensor = kernel_table(ao::kFakeQuantizePerTensorKernels)(op, x);
  auto& per_channel = kernel_table(ao::kFakeQuantizePerChannelKernels)(op, x);
  auto& masked_gradient = kernel_table(ao::kMaskedGradientKernels)(op, x);
  auto& learnable_backward = kernel_table(ao::kLearnablePerTensorBackwardKernels)(op, x);
  Tensor y = empty(shape), mask = empty(shape, TensorOptions().dtype(kUInt8)), dx = empty(shape);
  t = median_seconds([&] { y.copy_(x); }, reps);
  report("kernel: copy into preallocated y.copy_(x)", t, b_fwd);
  t = median_seconds([&] { per_tensor(x, 0.023f, 128, 0, 255, y, Tensor()); }, reps);
  report("kernel: per-tensor forward", t, b_fwd);
  t = median_seconds([&] { per_tensor(x, 0.023f, 128, 0, 255, y, mask); }, reps);
  report("kernel: per-tensor forward + mask", t, b_fwd);
  const std::vector<double> sc = scale_c.to_vector<double>();
  const std::vector<std::int64_t> zc = zp_c.to_vector<std::int64_t>();
  t = median_seconds([&] { per_channel(x, 1, sc, zc, 0, 255, y, mask); }, reps);
  report("kernel: per-channel forward + mask", t, b_fwd);
  t = median_seconds([&] { masked_gradient(dy, mask, dx); }, reps);
  report("kernel: backward dx = dy * mask", t, b_fwd);
  double gs = 0, gz = 0;
  t = median_seconds([&] { learnable_backward(x, dy, 0.023, 128, 0, 255, 1.0, dx, gs, gz); }, reps);
  report("kernel: learnable per-tensor backward", t, 12.0 * n);
  return 0;
}
