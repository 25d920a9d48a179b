// pad's backward on the GPU (part of test_gpu, Skipped without a GPU): the mapping modes gather
// each input element's gradients in ascending output order (ops/pad/pad_elem.h), the order of
// the CPU's scatter, so the gradients equal the CPU's bit for bit and do not change from run to
// run, with a strided output gradient and cropping pads.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/factory.h"
#include "ops/pad/pad.h"

using namespace qgrad;

TEST_CASE("cuda pad backward: bit for bit the CPU's gradients, the same on every run") {
  Generator gen(5);
  struct Case {
    std::string mode;
    std::vector<std::int64_t> pads;
  };
  for (const Case& c : {Case{"reflect", {3, 2, 1, 4}}, Case{"replicate", {9, 3, 2, 7}},
                        Case{"circular", {5, 2, 3, 1}}, Case{"replicate", {-2, 6, 3, -1}}}) {
    INFO(c.mode);
    const Tensor x0 = randn({4, 3, 17, 6}, gen);
    const Tensor y0 = pad(x0, c.pads, c.mode);
    const Tensor g0 = randn({y0.shape()[3], y0.shape()[2]}, gen).t().expand(y0.shape());
    auto grad = [&](Device d) {
      const Tensor x = x0.detach().to(d).set_requires_grad(true);
      pad(x, c.pads, c.mode)
          .backward(
              d.is_cpu() ? g0 : g0.contiguous().to(d).transpose(2, 3).contiguous().transpose(2, 3));
      return x.grad().to(kCPU).to_vector<float>();
    };
    const std::vector<float> cpu = grad(kCPU), gpu = grad(kCUDA), again = grad(kCUDA);
    REQUIRE(cpu.size() == gpu.size());
    CHECK(std::memcmp(cpu.data(), gpu.data(), cpu.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(gpu.data(), again.data(), gpu.size() * sizeof(float)) == 0);
  }
}
