// GPU benchmark of qgrad's fake quantizers on CUDA: per-tensor and per-channel torch.ao fake
// quantization (forward; forward + backward through autograd), the raw forward + mask kernel,
// the fused observer + fake quant per tensor and per channel, and the learnable (LSQ) fake
// quantization per tensor and per channel, forward + backward with the scale and zero-point
// gradients, on 16M float32 values, next to a device-to-device copy of the same bytes
// (y.copy_(x)). bench_fake_quant_gpu.py runs it beside PyTorch's
// torch.fake_quantize_per_tensor_affine, torch.fake_quantize_per_channel_affine,
// torch.fused_moving_avg_obs_fake_quant and torch._fake_quantize_learnable_per_*_affine on the
// same GPU, in one run.
//
// Each case runs once to warm up, then `reps` times between two synchronisations; the time is
// their mean (a single call of 128 MB lasts tens of microseconds, about a synchronisation's own
// cost). Prints one line per case: "<case> <seconds per call>".
// Run: build/bench/bench_fake_quant_gpu [cuda[:N]] [reps]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>

#include "core/autograd/grad_mode.h"
#include "core/device.h"
#include "core/factory.h"
#include "quant/torch_ao/fake_quantize.h"
#include "quant/torch_ao/fake_quantize_kernels.h"
#include "quant/torch_ao/fused_obs_fake_quant.h"
#include "quant/torch_ao/learnable_fake_quantize.h"

using namespace qgrad;

int main(int argc, char** argv) {
  const Device d = Device::parse(argc > 1 ? argv[1] : "cuda");
  const int reps = argc > 2 ? std::atoi(argv[2]) : 50;
  if (!d.is_cuda() || !cuda_is_available()) {
    std::fprintf(stderr, "bench_fake_quant_gpu: needs a visible CUDA device\n");
    return 2;
  }
  auto seconds = [&](const std::function<void()>& f) {
    f();
    synchronize(d);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) f();
    synchronize(d);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
  };
  auto line = [](const char* name, double s) { std::printf("%s %.9g\n", name, s); };

  const Shape shape{256, 64, 1024};  // per channel along axis 1: 64 channels
  Generator gen(0);
  auto on = [&](DType t) { return TensorOptions().dtype(t).device(d); };
  const Tensor x = uniform(shape, -3, 3, gen).to(d);
  const Tensor dy = uniform(shape, -1, 1, gen).to(d);
  const Tensor scale = full({1}, 0.023, on(kFloat32));
  const Tensor zp = full({1}, 128.0, on(kInt32));
  const Tensor scale_c = uniform({64}, 0.01, 0.05, gen).to(d);
  const Tensor zp_c = randint(0, 256, {64}, gen, TensorOptions().dtype(kInt32)).to(d);
  Tensor y = empty(shape, on(kFloat32)), mask = empty(shape, on(kUInt8));

  line("copy", seconds([&] { y.copy_(x); }));
  {
    NoGradGuard no_grad;
    line("per_tensor_forward",
         seconds([&] { ao::fake_quantize_per_tensor_affine(x, scale, zp, 0, 255); }));
    line("per_channel_forward",
         seconds([&] { ao::fake_quantize_per_channel_affine(x, scale_c, zp_c, 1, 0, 255); }));
    auto& kernel = kernel_table(ao::kFakeQuantizeQParamsKernels)("bench", x);
    line("per_tensor_forward_mask_kernel",
         seconds([&] { kernel(x, scale, zp, -1, 0, 255, y, mask); }));
  }
  const Tensor xg = x.detach().set_requires_grad(true);
  line("per_tensor_forward_backward", seconds([&] {
         xg.set_grad(Tensor());
         ao::fake_quantize_per_tensor_affine(xg, scale, zp, 0, 255).backward(dy);
       }));
  line("per_channel_forward_backward", seconds([&] {
         xg.set_grad(Tensor());
         ao::fake_quantize_per_channel_affine(xg, scale_c, zp_c, 1, 0, 255).backward(dy);
       }));
  // The fused op as FusedMovingAvgObsFakeQuantize runs it: observing and fake quantizing.
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor flag = ones({1}, on(kInt64));
  Tensor rmin = full({1}, inf, on(kFloat32)), rmax = full({1}, -inf, on(kFloat32));
  Tensor fs = ones({1}, on(kFloat32)), fz = zeros({1}, on(kInt32));
  const Tensor xw = x.reshape({256, 64 * 1024});  // per channel along axis 0: 256 rows
  Tensor cmin = empty({0}, on(kFloat32)), cmax = empty({0}, on(kFloat32));
  Tensor cs = ones({256}, on(kFloat32)), cz = zeros({256}, on(kInt32));
  {
    NoGradGuard no_grad;
    line("fused_per_tensor_forward", seconds([&] {
           ao::fused_moving_avg_obs_fake_quant(x, flag, flag, rmin, rmax, fs, fz, 0.01, 0, 255, -1,
                                               false, false);
         }));
    line("fused_per_channel_forward", seconds([&] {
           ao::fused_moving_avg_obs_fake_quant(xw, flag, flag, cmin, cmax, cs, cz, 0.01, -128, 127,
                                               0, true, true);
         }));
  }
  line("fused_per_tensor_forward_backward", seconds([&] {
         xg.set_grad(Tensor());
         ao::fused_moving_avg_obs_fake_quant(xg, flag, flag, rmin, rmax, fs, fz, 0.01, 0, 255, -1,
                                             false, false)
             .backward(dy);
       }));
  // LSQ as LearnableFakeQuantize runs it: dx and the scale / zero-point gradients.
  const Tensor ls = full({1}, 0.023, on(kFloat32)).set_requires_grad(true);
  const Tensor lz = full({1}, 128.0, on(kFloat32)).set_requires_grad(true);
  const Tensor lsc = scale_c.detach().set_requires_grad(true);
  const Tensor lzc = zp_c.to(kFloat32).set_requires_grad(true);
  line("learnable_per_tensor_forward_backward", seconds([&] {
         xg.set_grad(Tensor());
         ao::fake_quantize_learnable_per_tensor_affine(xg, ls, lz, 0, 255, 1.0).backward(dy);
       }));
  line("learnable_per_channel_forward_backward", seconds([&] {
         xg.set_grad(Tensor());
         ao::fake_quantize_learnable_per_channel_affine(xg, lsc, lzc, 1, 0, 255, 1.0).backward(dy);
       }));
  return 0;
}
