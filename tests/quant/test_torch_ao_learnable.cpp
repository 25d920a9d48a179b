// Tests of torch.ao learnable fake quantization (quant/torch_ao/learnable_fake_quantize.h): the
// worked example, golden fixtures from PyTorch 1.13 (forward and dx bit for bit, per-element
// scale / zero-point gradients bit for bit, summed gradients to float precision, with and without
// grad_factor), finite differences of the straight-through surrogate, and bad arguments.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <string>

#include "core/factory.h"
#include "core/npy.h"
#include "quant/torch_ao/learnable_fake_quantize.h"
#include "support/fixtures.h"

using namespace qgrad;
using qgrad_test::float_bits;
using qgrad_test::require_bitwise;

namespace {

bool has_fixture(const std::string& name) {
  return qgrad_test::has_fixture("quant_ao", name);
}
Tensor load(const std::string& name) {
  return qgrad_test::load_fixture("quant_ao", name);
}

void require_close(const std::vector<double>& got, const std::vector<double>& want,
                   const std::string& what, double rel = 2e-5, double abs = 1e-5) {
  qgrad_test::require_close_values(got, want, rel, abs, what);
}

Tensor param(double v, DType dt = kFloat32) {
  return full({1}, v, TensorOptions().dtype(dt)).set_requires_grad(true);
}

}  // namespace

TEST_CASE("ao learnable per-tensor: PyTorch's worked example", "[quant][torch_ao]") {
  Tensor x = from_vector<float>({-1, -0.26f, 0, 0.04f, 0.05f, 0.26f, 1, 12.8f, 13}, {9});
  x.set_requires_grad(true);
  Tensor s = param(0.1), z = param(2.5);
  Tensor y = ao::fake_quantize_learnable_per_tensor_affine(x, s, z, 0, 127, 1.0);
  const std::vector<float> want_y{-0.2f, -0.2f, 0, 0, 0, 0.3f, 1.0f, 12.5f, 12.5f};
  const std::vector<float> yv = y.to_vector<float>();
  for (std::size_t i = 0; i < yv.size(); ++i) CHECK(yv[i] == Approx(want_y[i]).margin(1e-6));
  y.backward(ones({9}));
  CHECK(x.grad().to_vector<float>() == std::vector<float>{0, 1, 1, 1, 1, 1, 1, 0, 0});
  CHECK(s.grad().item<float>() == 245.1f);
  CHECK(z.grad().item<float>() == Approx(-0.3f).epsilon(1e-6));
}

TEST_CASE("ao learnable per-tensor matches PyTorch", "[quant][torch_ao]") {
  int cases = 0;
  for (int i = 0; has_fixture("lfq_tensor_" + std::to_string(i) + "_x"); ++i, ++cases) {
    const std::string p = "lfq_tensor_" + std::to_string(i) + "_";
    const std::vector<double> prm = load(p + "params").to_vector<double>();
    INFO("case " << i << " scale " << prm[0] << " zp " << prm[1] << " grad_factor " << prm[4]);
    Tensor x = load(p + "x").set_requires_grad(true);
    Tensor s = param(prm[0]), z = param(prm[1]);
    Tensor y = ao::fake_quantize_learnable_per_tensor_affine(
        x, s, z, static_cast<std::int64_t>(prm[2]), static_cast<std::int64_t>(prm[3]), prm[4]);
    require_bitwise(y, load(p + "y"), "forward");
    y.backward(load(p + "dy"));
    require_bitwise(x.grad(), load(p + "dx"), "dx");
    require_close({s.grad().item<double>(), z.grad().item<double>()},
                  load(p + "grads").to_vector<double>(), "dscale/dzero_point");
  }
  REQUIRE(cases >= 5);
}

TEST_CASE("ao learnable per-tensor gradients per element are bit-exact", "[quant][torch_ao]") {
  const std::vector<double> prm = load("lfq_elem_params").to_vector<double>();
  const std::vector<float> x = load("lfq_elem_x").to_vector<float>();
  const std::vector<float> dy = load("lfq_elem_dy").to_vector<float>();
  const std::vector<float> ds = load("lfq_elem_dscale").to_vector<float>();
  const std::vector<float> dz = load("lfq_elem_dzp").to_vector<float>();
  for (std::size_t i = 0; i < x.size(); ++i) {
    Tensor xi = from_vector<float>({x[i]}, {1}).set_requires_grad(true);
    Tensor s = param(prm[0]), z = param(prm[1]);
    Tensor y = ao::fake_quantize_learnable_per_tensor_affine(
        xi, s, z, static_cast<std::int64_t>(prm[2]), static_cast<std::int64_t>(prm[3]), prm[4]);
    y.backward(from_vector<float>({dy[i]}, {1}));
    INFO("element " << i << " x " << x[i] << " dscale " << s.grad().item<float>() << " want "
                    << ds[i]);
    REQUIRE(float_bits(s.grad().item<float>()) == float_bits(ds[i]));
    REQUIRE(float_bits(z.grad().item<float>()) == float_bits(dz[i]));
  }
}

TEST_CASE("ao learnable per-channel matches PyTorch", "[quant][torch_ao]") {
  int cases = 0;
  for (int i = 0; has_fixture("lfq_channel_" + std::to_string(i) + "_x"); ++i, ++cases) {
    const std::string p = "lfq_channel_" + std::to_string(i) + "_";
    const std::vector<double> prm = load(p + "params").to_vector<double>();
    INFO("case " << i);
    Tensor x = load(p + "x").set_requires_grad(true);
    Tensor s = load(p + "scale").set_requires_grad(true);
    Tensor z = load(p + "zp").set_requires_grad(true);
    Tensor y = ao::fake_quantize_learnable_per_channel_affine(
        x, s, z, static_cast<std::int64_t>(prm[0]), static_cast<std::int64_t>(prm[1]),
        static_cast<std::int64_t>(prm[2]), prm[3]);
    require_bitwise(y, load(p + "y"), "forward");
    y.backward(load(p + "dy"));
    require_bitwise(x.grad(), load(p + "dx"), "dx");
    if (x.numel() == s.numel()) {  // one element per channel: sums are single terms
      require_bitwise(s.grad(), load(p + "dscale"), "dscale");
      require_bitwise(z.grad(), load(p + "dzp"), "dzero_point");
    } else {
      require_close(s.grad().to_vector<double>(), load(p + "dscale").to_vector<double>(), "dscale");
      require_close(z.grad().to_vector<double>(), load(p + "dzp").to_vector<double>(), "dzp");
    }
  }
  REQUIRE(cases >= 3);
}

// The straight-through surrogate whose exact derivative the learnable gradients are: with the
// rounding residual d = xq - (x/s + zp_b) frozen at the evaluation point,
//   f(x, s, zp) = s * (clamp(x/s + zp + d, qmin, qmax) - zp)
// gives d/dx = 1 inside, d/ds = (xq - zp) - x/s inside and bound - zp outside, d/dzp = -s
// outside... evaluated in double away from ties and bounds.
TEST_CASE("ao learnable gradients equal finite differences of the STE surrogate",
          "[quant][torch_ao]") {
  Generator gen(3);
  const std::int64_t qmin = -8, qmax = 23;
  const double s0 = 0.173, z0 = 3.0, g = 0.7;  // integral zp: the forward and backward agree
  Tensor xv = uniform({200}, -3, 5, gen, TensorOptions().dtype(kFloat64));
  Tensor w = uniform({200}, -1, 1, gen, TensorOptions().dtype(kFloat64));
  const std::vector<double> xs = xv.to_vector<double>(), ws = w.to_vector<double>();
  // Keep points away from rounding ties and clamp boundaries.
  std::vector<double> keep_x, keep_w;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double t = xs[i] / s0 + z0;
    const double frac = t - std::floor(t);
    if (std::fabs(frac - 0.5) < 0.05 || std::fabs(t - qmin) < 0.6 || std::fabs(t - qmax) < 0.6)
      continue;
    keep_x.push_back(xs[i]);
    keep_w.push_back(ws[i]);
  }
  const auto n = static_cast<std::int64_t>(keep_x.size());
  Tensor x = from_vector<double>(keep_x, {n}).set_requires_grad(true);
  Tensor s = param(s0, kFloat64), z = param(z0, kFloat64);
  Tensor y = ao::fake_quantize_learnable_per_tensor_affine(x, s, z, qmin, qmax, g);
  y.backward(from_vector<double>(keep_w, {n}));

  std::vector<double> d(keep_x.size());
  for (std::size_t i = 0; i < keep_x.size(); ++i) {
    const double t = keep_x[i] / s0 + z0;
    d[i] = std::nearbyint(t) - t;
  }
  auto f = [&](std::size_t i, double xi, double si, double zi) {
    const double t = std::min<double>(std::max<double>(xi / si + zi + d[i], qmin), qmax);
    return si * (t - zi);
  };
  const double h = 1e-6;
  double fd_s = 0, fd_z = 0;
  for (std::size_t i = 0; i < keep_x.size(); ++i) {
    fd_s += keep_w[i] * (f(i, keep_x[i], s0 + h, z0) - f(i, keep_x[i], s0 - h, z0)) / (2 * h);
    fd_z += keep_w[i] * (f(i, keep_x[i], s0, z0 + h) - f(i, keep_x[i], s0, z0 - h)) / (2 * h);
    const double fd_x = (f(i, keep_x[i] + h, s0, z0) - f(i, keep_x[i] - h, s0, z0)) / (2 * h);
    REQUIRE(x.grad().to_vector<double>()[i] == Approx(keep_w[i] * fd_x).margin(1e-6));
  }
  CHECK(s.grad().item<double>() == Approx(g * fd_s).epsilon(1e-6).margin(1e-6));
  CHECK(z.grad().item<double>() == Approx(g * fd_z).epsilon(1e-6).margin(1e-6));
}

TEST_CASE("ao learnable fake quantize rejects bad arguments", "[quant][torch_ao]") {
  using Catch::Contains;
  Tensor x = ones({2, 3});
  REQUIRE_THROWS_WITH(
      ao::fake_quantize_learnable_per_tensor_affine(x, param(0.0), param(0), 0, 255),
      Contains("_fake_quantize_learnable_per_tensor_affine") && Contains("scale"));
  REQUIRE_THROWS_AS(ao::fake_quantize_learnable_per_tensor_affine(x, param(-1), param(0), 0, 255),
                    ValueError);
  REQUIRE_THROWS_AS(
      ao::fake_quantize_learnable_per_tensor_affine(x, param(0.1), param(std::nan("")), 0, 255),
      ValueError);
  REQUIRE_THROWS_AS(ao::fake_quantize_learnable_per_tensor_affine(x, param(0.1), param(0), 3, 2),
                    ValueError);
  REQUIRE_THROWS_AS(
      ao::fake_quantize_learnable_per_tensor_affine(x, full({2}, 0.1), param(0), 0, 255),
      ShapeError);
  REQUIRE_THROWS_AS(
      ao::fake_quantize_learnable_per_tensor_affine(x, param(0.1, kFloat64), param(0), 0, 255),
      DTypeError);
  REQUIRE_THROWS_AS(
      ao::fake_quantize_learnable_per_channel_affine(x, full({2}, 0.1), zeros({3}), 1, 0, 255),
      ShapeError);
  REQUIRE_THROWS_AS(
      ao::fake_quantize_learnable_per_channel_affine(x, full({3}, 0.1), zeros({3}), 2, 0, 255),
      IndexError);
  REQUIRE_THROWS_AS(ao::learnable_grad_factor(0, 255), ValueError);
  CHECK(ao::learnable_grad_factor(100, 255) == Approx(1.0 / std::sqrt(25500.0)));
}

TEST_CASE("ao learnable fake quantize clamps a zero point outside the range", "[quant][torch_ao]") {
  // zp 300 with [0,255]: forward uses 255 (clamp), so x=0 maps to 0.
  Tensor x = from_vector<float>({0.0f, -0.1f, 1.0f}, {3});
  Tensor y = ao::fake_quantize_learnable_per_tensor_affine(x, param(0.1), param(300), 0, 255);
  const std::vector<float> v = y.to_vector<float>();
  CHECK(v[0] == 0.0f);
  CHECK(v[1] == Approx(-0.1f));
  CHECK(v[2] == 0.0f);  // 255 + 10 clamps to 255 -> (255 - 255) * 0.1
}

TEST_CASE("ao learnable fake quantize: NaN input poisons the parameter gradients",
          "[quant][torch_ao]") {
  Tensor x = from_vector<float>({std::nanf(""), 0.3f}, {2}).set_requires_grad(true);
  Tensor s = param(0.1), z = param(2.0);
  Tensor y = ao::fake_quantize_learnable_per_tensor_affine(x, s, z, 0, 255);
  CHECK(std::isnan(y.to_vector<float>()[0]));
  y.backward(ones({2}));
  CHECK(x.grad().to_vector<float>() == std::vector<float>{0, 1});
  CHECK(std::isnan(s.grad().item<float>()));
  CHECK(std::isnan(z.grad().item<float>()));
}
