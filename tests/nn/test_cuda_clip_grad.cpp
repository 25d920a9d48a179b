// clip_grad_norm_ on the GPU beyond the cross-device op case (part of test_gpu, Skipped without a
// GPU): the tensor-returning form leaves its norm on the gradients' device and agrees with the
// double form; gradients split between the CPU and the GPU are clipped by their joint norm, as
// on one device.
#include <catch2/catch.hpp>

#include <vector>

#include "core/device.h"
#include "core/factory.h"
#include "nn/utils/clip_grad.h"
#include "ops/binary/binary.h"

using namespace qgrad;

namespace {

std::vector<Tensor> params_with_grads(const std::vector<Tensor>& grads) {
  std::vector<Tensor> ps;
  for (const Tensor& g : grads) {
    Tensor p = zeros_like(g).set_requires_grad(true);
    p.set_grad(g.clone());
    ps.push_back(p);
  }
  return ps;
}

}  // namespace

TEST_CASE(
    "cuda clip_grad_norm_tensor_: the norm stays on the GPU, and mixed devices clip jointly") {
  Generator gen(11);
  const Tensor a0 = randn({300, 7}, gen) * 3.0, b0 = randn({1000}, gen);
  for (double p : {2.0, 1.0, 3.0}) {
    INFO("p " << p);
    std::vector<Tensor> cpu = params_with_grads({a0, b0});
    const double want = nn::utils::clip_grad_norm_(cpu, 0.5, p);

    std::vector<Tensor> gpu = params_with_grads({a0.to(kCUDA), b0.to(kCUDA)});
    const Tensor t = nn::utils::clip_grad_norm_tensor_(gpu, 0.5, p);
    REQUIRE(t.device() == kCUDA);
    REQUIRE((t.dim() == 0 && t.dtype() == kFloat32));
    // Summed in another order on the GPU: close, not bitwise.
    CHECK(t.item<double>() == Approx(want).epsilon(1e-5));

    // The first gradient on the CPU, the second on the GPU: the norm lands on the CPU.
    std::vector<Tensor> mixed = params_with_grads({a0, b0.to(kCUDA)});
    const Tensor m = nn::utils::clip_grad_norm_tensor_(mixed, 0.5, p);
    REQUIRE(m.device() == kCPU);
    CHECK(m.item<double>() == Approx(want).epsilon(1e-5));
    for (int j = 0; j < 2; ++j) {
      const std::vector<float> w = cpu[j].grad().to_vector<float>();
      const std::vector<float> g = gpu[j].grad().to(kCPU).to_vector<float>();
      const std::vector<float> x = mixed[j].grad().to(kCPU).to_vector<float>();
      REQUIRE(w.size() == g.size());
      for (std::size_t i = 0; i < w.size(); i += 97) {
        CHECK(g[i] == Approx(w[i]).epsilon(1e-5).margin(1e-9));
        CHECK(x[i] == Approx(w[i]).epsilon(1e-5).margin(1e-9));
      }
    }
  }
}
