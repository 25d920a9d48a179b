// Tests of the learnable fake quantizer's device path (ao::fake_quantize_learnable_device, what a
// GPU runs with its parameters as device tensors), here on the CPU through the same functors:
// PyTorch's golden fixtures (forward and dx bit for bit, one-element gradients bit for bit, sums
// to float precision), agreement with the CPU functions on odd shapes, views, broadcast
// gradients and zero points off the grid, and its errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/factory.h"
#include "core/generator.h"
#include "ops/binary/binary.h"
#include "quant/torch_ao/learnable_fake_quantize.h"
#include "support/fixtures.h"

using namespace qgrad;
using qgrad_test::float_bits;
using qgrad_test::require_bitwise;

namespace {

Tensor load(const std::string& name) {
  return qgrad_test::load_fixture("quant_ao", name);
}

Tensor param(const std::vector<float>& v) {
  return from_vector<float>(v, {static_cast<std::int64_t>(v.size())}).set_requires_grad(true);
}

// Gradient sums: double in another order than the CPU kernel's, rounded to float32 once.
void require_sums_close(const Tensor& got, const Tensor& want, const std::string& what) {
  qgrad_test::require_close_values(got.to_vector<double>(), want.to_vector<double>(), 1e-6, 1e-6,
                                   what);
}

struct Grads {
  Tensor y, dx, ds, dz;
};

// One forward and backward through `f` with fresh leaves.
template <typename F>
Grads run(F f, const Tensor& x, const std::vector<float>& s, const std::vector<float>& z,
          const Tensor& dy) {
  Tensor xl = x.detach().set_requires_grad(true), sl = param(s), zl = param(z);
  Tensor y = f(xl, sl, zl);
  y.backward(dy);
  return {y.detach(), xl.grad(), sl.grad(), zl.grad()};
}

}  // namespace

TEST_CASE("ao learnable device path: PyTorch's fixtures", "[quant][torch_ao]") {
  int cases = 0;
  for (int i = 0; qgrad_test::has_fixture("quant_ao", "lfq_tensor_" + std::to_string(i) + "_x");
       ++i, ++cases) {
    const std::string p = "lfq_tensor_" + std::to_string(i) + "_";
    const std::vector<double> prm = load(p + "params").to_vector<double>();
    INFO("case " << i);
    Tensor x = load(p + "x").set_requires_grad(true);
    Tensor s = param({static_cast<float>(prm[0])}), z = param({static_cast<float>(prm[1])});
    Tensor y = ao::fake_quantize_learnable_device(x, s, z, -1, static_cast<std::int64_t>(prm[2]),
                                                  static_cast<std::int64_t>(prm[3]), prm[4]);
    require_bitwise(y, load(p + "y"), "forward");
    y.backward(load(p + "dy"));
    require_bitwise(x.grad(), load(p + "dx"), "dx");
    qgrad_test::require_close_values({s.grad().item<double>(), z.grad().item<double>()},
                                     load(p + "grads").to_vector<double>(), 2e-5, 1e-5,
                                     "dscale/dzero_point");
  }
  REQUIRE(cases >= 5);
  // One element per call: the sums are single terms, PyTorch's bits.
  const std::vector<double> prm = load("lfq_elem_params").to_vector<double>();
  const std::vector<float> x = load("lfq_elem_x").to_vector<float>();
  const std::vector<float> dy = load("lfq_elem_dy").to_vector<float>();
  const std::vector<float> ds = load("lfq_elem_dscale").to_vector<float>();
  const std::vector<float> dz = load("lfq_elem_dzp").to_vector<float>();
  for (std::size_t i = 0; i < x.size(); ++i) {
    const Grads g = run(
        [&](const Tensor& a, const Tensor& s, const Tensor& z) {
          return ao::fake_quantize_learnable_device(a, s, z, -1, static_cast<std::int64_t>(prm[2]),
                                                    static_cast<std::int64_t>(prm[3]), prm[4]);
        },
        from_vector<float>({x[i]}, {1}), {static_cast<float>(prm[0])}, {static_cast<float>(prm[1])},
        from_vector<float>({dy[i]}, {1}));
    INFO("element " << i << " x " << x[i]);
    REQUIRE(float_bits(g.ds.item<float>()) == float_bits(ds[i]));
    REQUIRE(float_bits(g.dz.item<float>()) == float_bits(dz[i]));
  }
  int channel_cases = 0;
  for (int i = 0; qgrad_test::has_fixture("quant_ao", "lfq_channel_" + std::to_string(i) + "_x");
       ++i, ++channel_cases) {
    const std::string p = "lfq_channel_" + std::to_string(i) + "_";
    const std::vector<double> c = load(p + "params").to_vector<double>();
    INFO("channel case " << i);
    Tensor xc = load(p + "x").set_requires_grad(true);
    Tensor s = load(p + "scale").set_requires_grad(true);
    Tensor z = load(p + "zp").set_requires_grad(true);
    Tensor y = ao::fake_quantize_learnable_device(xc, s, z, static_cast<std::int64_t>(c[0]),
                                                  static_cast<std::int64_t>(c[1]),
                                                  static_cast<std::int64_t>(c[2]), c[3]);
    require_bitwise(y, load(p + "y"), "forward");
    y.backward(load(p + "dy"));
    require_bitwise(xc.grad(), load(p + "dx"), "dx");
    require_sums_close(s.grad(), load(p + "dscale"), "dscale");
    require_sums_close(z.grad(), load(p + "dzp"), "dzero_point");
  }
  REQUIRE(channel_cases >= 3);
}

TEST_CASE("ao learnable device path gives the CPU functions' bits on views and odd shapes",
          "[quant][torch_ao]") {
  Generator gen(7);
  const Tensor base = mul(randn({3, 5, 7, 2}, gen), 3.0);
  // x: contiguous, and a transposed view; dy: dense, and one value broadcast.
  const Tensor views[] = {base, base.transpose(1, 2)};
  for (const Tensor& x : views)
    for (bool broadcast_dy : {false, true}) {
      const Tensor dy = broadcast_dy ? full({1}, 0.75).expand(x.shape()) : randn(x.shape(), gen);
      // Per tensor: zero points on and off the grid, inside and outside the range, negative.
      for (float zp : {0.0f, 2.5f, -0.5f, 300.0f, -7.25f})
        for (const auto& range :
             {std::pair<std::int64_t, std::int64_t>{0, 255}, {-128, 127}, {-8, 7}}) {
          // Plain copies: a lambda may not capture a structured binding in C++17.
          const std::int64_t qmin = range.first, qmax = range.second;
          INFO("per tensor zp " << zp << " [" << qmin << ", " << qmax << "] transposed "
                                << !x.is_contiguous() << " broadcast dy " << broadcast_dy);
          const double g = 0.37;
          const Grads cpu = run(
              [&](const Tensor& a, const Tensor& s, const Tensor& z) {
                return ao::fake_quantize_learnable_per_tensor_affine(a, s, z, qmin, qmax, g);
              },
              x, {0.0625f}, {zp}, dy);
          const Grads dev = run(
              [&](const Tensor& a, const Tensor& s, const Tensor& z) {
                return ao::fake_quantize_learnable_device(a, s, z, -1, qmin, qmax, g);
              },
              x, {0.0625f}, {zp}, dy);
          require_bitwise(dev.y, cpu.y, "forward");
          require_bitwise(dev.dx, cpu.dx, "dx");
          require_sums_close(dev.ds, cpu.ds, "dscale");
          require_sums_close(dev.dz, cpu.dz, "dzero_point");
        }
      // Per channel along every axis (negative included), one scale and zero point each.
      for (std::int64_t axis : {0, 1, 2, 3, -1}) {
        const std::int64_t n = x.size(axis < 0 ? axis + x.dim() : axis);
        std::vector<float> s, z;
        for (std::int64_t c = 0; c < n; ++c) {
          s.push_back(0.03f * static_cast<float>(c + 1));
          z.push_back(static_cast<float>(c) * 1.5f - 2.0f);
        }
        INFO("per channel axis " << axis << " transposed " << !x.is_contiguous());
        const Grads cpu = run(
            [&](const Tensor& a, const Tensor& sp, const Tensor& zp) {
              return ao::fake_quantize_learnable_per_channel_affine(a, sp, zp, axis, -8, 7, 1.0);
            },
            x, s, z, dy);
        const Grads dev = run(
            [&](const Tensor& a, const Tensor& sp, const Tensor& zp) {
              return ao::fake_quantize_learnable_device(a, sp, zp, axis < 0 ? axis + a.dim() : axis,
                                                        -8, 7, 1.0);
            },
            x, s, z, dy);
        require_bitwise(dev.y, cpu.y, "forward");
        require_bitwise(dev.dx, cpu.dx, "dx");
        require_sums_close(dev.ds, cpu.ds, "dscale");
        require_sums_close(dev.dz, cpu.dz, "dzero_point");
      }
    }
}

TEST_CASE("ao learnable device path: bad parameters and arguments are errors",
          "[quant][torch_ao]") {
  using Catch::Contains;
  const Tensor x = ones({2, 3});
  auto per_tensor = [&](float s, float z) {
    return ao::fake_quantize_learnable_device(x, param({s}), param({z}), -1, 0, 255);
  };
  CHECK_NOTHROW(per_tensor(0.1f, 3.5f));
  for (float bad : {0.0f, -1.0f, INFINITY, NAN})
    CHECK_THROWS_WITH(per_tensor(bad, 0.0f),
                      Contains("_fake_quantize_learnable_per_tensor_affine") && Contains("scale"));
  CHECK_THROWS_AS(per_tensor(0.1f, NAN), ValueError);
  CHECK_THROWS_AS(per_tensor(0.1f, INFINITY), ValueError);
  CHECK_THROWS_WITH(
      ao::fake_quantize_learnable_device(x, param({0.1f, -0.1f, 0.1f}), param({0, 0, 0}), 1, 0,
                                         255),
      Contains("_fake_quantize_learnable_per_channel_affine") && Contains("of channel 1"));
  CHECK_THROWS_AS(
      ao::fake_quantize_learnable_device(x, param({0.1f, 0.1f}), param({0, 0}), 1, 0, 255),
      ShapeError);
  CHECK_THROWS_AS(
      ao::fake_quantize_learnable_device(x, param({0.1f, 0.1f}), param({0, 0}), -1, 0, 255),
      ShapeError);
  CHECK_THROWS_AS(
      ao::fake_quantize_learnable_device(x.to(kFloat64), param({0.1f}), param({0}), -1, 0, 255),
      DTypeError);
  CHECK_THROWS_AS(ao::fake_quantize_learnable_device(x, param({0.1f}), param({0}), -1, 3, 2),
                  ValueError);
  CHECK_THROWS_AS(ao::fake_quantize_learnable_device(x, param({0.1f}), param({0}), -1,
                                                     -(std::int64_t{1} << 31), 0),
                  ValueError);
  CHECK_THROWS_AS(
      ao::fake_quantize_learnable_device(x, param({0.1f, 0.1f, 0.1f}), param({0, 0, 0}), 2, 0, 255),
      IndexError);
  CHECK_THROWS_AS(ao::fake_quantize_learnable_device(x, param({0.1f}), param({0}), -1, 0, 255, NAN),
                  ValueError);
}
