// Tests of torch.ao fake quantization with fixed qparams (quant/torch_ao/fake_quantize.h): golden
// fixtures from PyTorch 1.13 compared bit for bit (forward and gradient, ties, range edges, -0.0,
// tiny scales, zero points at the bounds, qint32 ranges), strided inputs, documented NaN/Inf
// behaviour, properties and bad-argument errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "core/factory.h"
#include "core/npy.h"
#include "ops/binary/binary.h"
#include "quant/torch_ao/fake_quantize.h"
#include "quant/torch_ao/fake_quantize_kernels.h"
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

// The same logical tensor with transposed (non-contiguous) strides.
Tensor non_contiguous(const Tensor& t) {
  if (t.dim() < 2) return t;
  return t.transpose(0, t.dim() - 1).contiguous().transpose(0, t.dim() - 1);
}

}  // namespace

TEST_CASE("ao fake_quantize_per_tensor_affine matches PyTorch bit for bit", "[quant][torch_ao]") {
  int cases = 0;
  for (int i = 0; has_fixture("fq_tensor_" + std::to_string(i) + "_x"); ++i, ++cases) {
    const std::string p = "fq_tensor_" + std::to_string(i) + "_";
    const std::vector<double> prm = load(p + "params").to_vector<double>();
    INFO("case " << i << " scale " << prm[0] << " zp " << prm[1] << " range [" << prm[2] << ", "
                 << prm[3] << "]");
    Tensor x = load(p + "x").set_requires_grad(true);
    Tensor y = ao::fake_quantize_per_tensor_affine(x, prm[0], static_cast<std::int64_t>(prm[1]),
                                                   static_cast<std::int64_t>(prm[2]),
                                                   static_cast<std::int64_t>(prm[3]));
    require_bitwise(y, load(p + "y"), "forward");
    y.backward(load(p + "dy"));
    require_bitwise(x.grad(), load(p + "dx"), "gradient");

    // A strided view of the same values gives the same results.
    const Tensor xv = load(p + "x");
    const std::int64_t n = xv.numel();
    Tensor base = zeros({n, 2});
    base.select(1, 1).copy_(xv);
    base.set_requires_grad(true);
    Tensor ys = ao::fake_quantize_per_tensor_affine(
        base.select(1, 1), prm[0], static_cast<std::int64_t>(prm[1]),
        static_cast<std::int64_t>(prm[2]), static_cast<std::int64_t>(prm[3]));
    require_bitwise(ys, load(p + "y"), "strided forward");
    ys.backward(load(p + "dy"));
    require_bitwise(base.grad().select(1, 1), load(p + "dx"), "strided gradient");
  }
  REQUIRE(cases >= 8);
}

TEST_CASE("ao fake_quantize_per_channel_affine matches PyTorch bit for bit", "[quant][torch_ao]") {
  int cases = 0;
  for (int i = 0; has_fixture("fq_channel_" + std::to_string(i) + "_x"); ++i, ++cases) {
    const std::string p = "fq_channel_" + std::to_string(i) + "_";
    const std::vector<double> prm = load(p + "params").to_vector<double>();
    const auto axis = static_cast<std::int64_t>(prm[0]);
    const auto qmin = static_cast<std::int64_t>(prm[1]), qmax = static_cast<std::int64_t>(prm[2]);
    INFO("case " << i << " axis " << axis);
    const Tensor scale = load(p + "scale"), zp = load(p + "zp");
    for (bool strided : {false, true}) {
      INFO("strided " << strided);
      Tensor x = strided ? non_contiguous(load(p + "x")) : load(p + "x");
      if (strided) REQUIRE_FALSE(x.is_contiguous());
      x.set_requires_grad(true);
      Tensor y = ao::fake_quantize_per_channel_affine(x, scale, zp, axis, qmin, qmax);
      require_bitwise(y, load(p + "y"), "forward");
      y.backward(load(p + "dy"));
      require_bitwise(x.grad(), load(p + "dx"), "gradient");
    }
    // A negative axis names the same dimension; int64 zero points work too.
    Tensor y2 = ao::fake_quantize_per_channel_affine(load(p + "x"), scale, zp.to(kInt64),
                                                     axis - load(p + "x").dim(), qmin, qmax);
    require_bitwise(y2, load(p + "y"), "negative axis");
  }
  REQUIRE(cases >= 4);
}

TEST_CASE("ao fake quantize: NaN propagates, infinities clamp", "[quant][torch_ao]") {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = from_vector<float>({std::nanf(""), inf, -inf, 1e30f, -1e30f, 0.35f}, {6});
  x.set_requires_grad(true);
  Tensor y = ao::fake_quantize_per_tensor_affine(x, 0.1, 3, 0, 255);
  const std::vector<float> v = y.to_vector<float>();
  CHECK(std::isnan(v[0]));
  CHECK(v[1] == (255 - 3) * 0.1f);
  CHECK(v[2] == (0 - 3) * 0.1f);
  CHECK(v[3] == (255 - 3) * 0.1f);
  CHECK(v[4] == (0 - 3) * 0.1f);
  y.backward(ones({6}));
  CHECK(x.grad().to_vector<float>() == std::vector<float>{0, 0, 0, 0, 0, 1});

  Tensor xc = from_vector<float>({std::nanf(""), inf, -inf, 1e30f}, {1, 4});
  Tensor yc = ao::fake_quantize_per_channel_affine(
      xc, full({1}, 0.1), zeros({1}, TensorOptions().dtype(kInt32)), 0, -128, 127);
  const std::vector<float> vc = yc.to_vector<float>();
  CHECK(std::isnan(vc[0]));
  CHECK(vc[1] == 127 * 0.1f);
  CHECK(vc[2] == -128 * 0.1f);
  CHECK(vc[3] == 127 * 0.1f);
}

TEST_CASE("ao fake quantize properties: on grid, idempotent, monotone", "[quant][torch_ao]") {
  Generator gen(7);
  Tensor x = uniform({4096}, -30, 30, gen);
  const double s = 0.0731;
  Tensor y = ao::fake_quantize_per_tensor_affine(x, s, 10, 0, 255);
  const std::vector<float> xv = x.to_vector<float>(), yv = y.to_vector<float>();
  const float sf = static_cast<float>(s);
  for (std::size_t i = 0; i < yv.size(); ++i) {
    const float k = yv[i] / sf;
    REQUIRE(std::fabs(k - std::nearbyint(k)) < 1e-3f);  // on the grid
    REQUIRE(yv[i] >= (0 - 10) * sf - 1e-6f);            // in range
    REQUIRE(yv[i] <= (255 - 10) * sf + 1e-6f);
  }
  Tensor yy = ao::fake_quantize_per_tensor_affine(y, s, 10, 0, 255);
  require_bitwise(yy, y, "idempotence");
  std::vector<std::size_t> order(xv.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return xv[a] < xv[b]; });
  for (std::size_t i = 1; i < order.size(); ++i) REQUIRE(yv[order[i]] >= yv[order[i - 1]]);
}

TEST_CASE("ao fake quantize rejects bad arguments", "[quant][torch_ao]") {
  Tensor x = ones({2, 3});
  using Catch::Contains;
  REQUIRE_THROWS_AS(ao::fake_quantize_per_tensor_affine(x, 0.0, 0, 0, 255), ValueError);
  REQUIRE_THROWS_WITH(ao::fake_quantize_per_tensor_affine(x, -0.1, 0, 0, 255),
                      Contains("fake_quantize_per_tensor_affine") && Contains("scale"));
  REQUIRE_THROWS_AS(ao::fake_quantize_per_tensor_affine(x, std::nan(""), 0, 0, 255), ValueError);
  REQUIRE_THROWS_AS(ao::fake_quantize_per_tensor_affine(x, 1e-60, 0, 0, 255), ValueError);
  REQUIRE_THROWS_WITH(ao::fake_quantize_per_tensor_affine(x, 0.1, 0, 10, 5), Contains("quant_min"));
  REQUIRE_THROWS_WITH(ao::fake_quantize_per_tensor_affine(x, 0.1, 300, 0, 255),
                      Contains("zero_point"));
  REQUIRE_THROWS_AS(
      ao::fake_quantize_per_tensor_affine(ones({2}, TensorOptions().dtype(kInt32)), 0.1, 0, 0, 255),
      DTypeError);
  REQUIRE_THROWS_AS(ao::fake_quantize_per_tensor_affine(Tensor(), 0.1, 0, 0, 255), ValueError);

  const Tensor s3 = full({3}, 0.1), z3 = zeros({3}, TensorOptions().dtype(kInt32));
  REQUIRE_NOTHROW(ao::fake_quantize_per_channel_affine(x, s3, z3, 1, 0, 255));
  REQUIRE_THROWS_AS(ao::fake_quantize_per_channel_affine(x, full({2}, 0.1), z3, 1, 0, 255),
                    ShapeError);
  REQUIRE_THROWS_WITH(ao::fake_quantize_per_channel_affine(x, full({3, 1}, 0.1), z3, 1, 0, 255),
                      Contains("fake_quantize_per_channel_affine") && Contains("scale"));
  // A float zero point is PyTorch's per_channel_affine_float_qparams (test_ao_fused.cpp); other
  // dtypes are errors.
  REQUIRE_NOTHROW(ao::fake_quantize_per_channel_affine(x, s3, zeros({3}), 1, 0, 255));
  REQUIRE_THROWS_AS(ao::fake_quantize_per_channel_affine(
                        x, s3, zeros({3}, TensorOptions().dtype(kUInt8)), 1, 0, 255),
                    DTypeError);
  REQUIRE_THROWS_AS(ao::fake_quantize_per_channel_affine(x, s3, zeros({2}), 1, 0, 255), ShapeError);
  REQUIRE_THROWS_AS(ao::fake_quantize_per_channel_affine(
                        x, s3, zeros({2}, TensorOptions().dtype(kInt32)), 1, 0, 255),
                    ShapeError);
  REQUIRE_THROWS_AS(ao::fake_quantize_per_channel_affine(x, s3, z3, 2, 0, 255), IndexError);
  REQUIRE_THROWS_AS(ao::fake_quantize_per_channel_affine(x, s3, z3, -3, 0, 255), IndexError);
  REQUIRE_THROWS_AS(
      ao::fake_quantize_per_channel_affine(scalar_tensor(1.0), full({1}, 0.1),
                                           zeros({1}, TensorOptions().dtype(kInt32)), 0, 0, 255),
      IndexError);
  REQUIRE_THROWS_AS(ao::fake_quantize_per_channel_affine(
                        x, from_vector<float>({0.1f, 0.0f, 0.1f}, {3}), z3, 1, 0, 255),
                    ValueError);
  REQUIRE_THROWS_AS(ao::fake_quantize_per_channel_affine(
                        x, s3, from_vector<std::int32_t>({0, 256, 0}, {3}), 1, 0, 255),
                    ValueError);
  REQUIRE_THROWS_AS(ao::fake_quantize_per_channel_affine(x, s3, z3, 1, 5, 4), ValueError);
}

TEST_CASE("ao fake quantize handles empty and float64 inputs", "[quant][torch_ao]") {
  Tensor e = empty({0, 3});
  REQUIRE(ao::fake_quantize_per_tensor_affine(e, 0.1, 0, 0, 255).numel() == 0);
  REQUIRE(ao::fake_quantize_per_channel_affine(e, full({3}, 0.1),
                                               zeros({3}, TensorOptions().dtype(kInt64)), 1, 0, 255)
              .numel() == 0);
  Tensor xd = from_vector<double>({-1.0, 0.26, 0.05, 30.0}, {4});
  Tensor yd = ao::fake_quantize_per_tensor_affine(xd, 0.1, 3, 0, 255);
  REQUIRE(yd.dtype() == kFloat64);
  const std::vector<double> v = yd.to_vector<double>();
  CHECK(v[0] == Approx(-0.3));
  CHECK(v[1] == Approx(0.3));
  CHECK(v[3] == Approx(25.2));
}

// The kernel the GPU runs (qparams as tensors, the element functors through map_outputs) gives,
// through cpu::Map, the bits of the CPU's own fake quantization for the same qparams: per tensor
// and per channel, integer and float zero points, float32 and float64, contiguous and strided
// inputs, its mask matching the CPU's gradient mask. So every formula the GPU computes is
// checked here, on the CPU.
TEST_CASE("fake quantization with tensor qparams: the GPU's element functors give the CPU's bits",
          "[quant][torch_ao]") {
  const KernelTable<ao::FakeQuantizeQParamsKernel>& table =
      kernel_table(ao::kFakeQuantizeQParamsKernels);
  const auto same_bits = qgrad_test::require_bitwise_f64;
  Generator gen(17);
  for (const DType dt : {kFloat32, kFloat64}) {
    for (const bool strided : {false, true}) {
      const Tensor base = (randn({4, 6, 5}, gen) * 3.0).to(dt);
      const Tensor x = strided ? base.transpose(0, 2) : base;  // [5, 6, 4], strided
      const std::int64_t C = x.size(1);
      std::vector<float> s, zf;
      std::vector<std::int32_t> zi;
      for (std::int64_t c = 0; c < C; ++c) {
        s.push_back(0.013f + 0.007f * static_cast<float>(c));
        zi.push_back(static_cast<std::int32_t>(c * 5 % 11) - 5);
        zf.push_back(static_cast<float>(zi.back()) - 0.5f);
      }
      struct Case {
        const char* what;
        Tensor scale, zp;
        std::int64_t axis, qmin, qmax;
      };
      const std::vector<Case> cases = {
          {"per tensor", from_vector<float>({0.021f}, {1}), from_vector<std::int32_t>({3}, {1}), -1,
           -128, 127},
          {"per tensor, int64 zero point", from_vector<float>({0.05f}, {1}),
           from_vector<std::int64_t>({200}, {1}), -1, 0, 255},
          {"per channel", from_vector(s, {C}), from_vector(zi, {C}), 1, -128, 127},
          {"per channel, float zero points", from_vector(s, {C}), from_vector(zf, {C}), 1, 0, 255},
      };
      for (const Case& k : cases) {
        INFO(k.what << (strided ? ", strided" : "") << ", " << dtype_name(dt));
        const Tensor xr = x.detach().set_requires_grad(true);
        const Tensor ref =
            k.axis < 0
                ? ao::fake_quantize_per_tensor_affine(xr, k.scale, k.zp, k.qmin, k.qmax)
                : ao::fake_quantize_per_channel_affine(xr, k.scale, k.zp, k.axis, k.qmin, k.qmax);
        ref.backward(ones(ref.shape(), TensorOptions().dtype(dt)));
        const Tensor y = empty(x.shape(), TensorOptions().dtype(dt));
        const Tensor mask = empty(x.shape(), TensorOptions().dtype(kUInt8));
        table("test", x)(x, k.scale, k.zp, k.axis, k.qmin, k.qmax, y, mask);
        same_bits(y, ref.detach());
        same_bits(mask, xr.grad());
        // Without a mask, the value alone.
        const Tensor y2 = empty(x.shape(), TensorOptions().dtype(dt));
        table("test", x)(x, k.scale, k.zp, k.axis, k.qmin, k.qmax, y2, Tensor());
        same_bits(y2, ref.detach());
        // The whole GPU path (qparams check, kernel, autograd), here on the CPU: the front's
        // value and gradient.
        const Tensor xd = x.detach().set_requires_grad(true);
        const Tensor yd =
            ao::fake_quantize_device_qparams(xd, k.scale, k.zp, k.axis, k.qmin, k.qmax);
        REQUIRE(yd.requires_grad());
        yd.backward(ones(yd.shape(), TensorOptions().dtype(dt)));
        same_bits(yd.detach(), ref.detach());
        same_bits(xd.grad(), xr.grad());
      }
    }
  }
}

// The qparams check the GPU runs as a kernel (qparams_usable), on the CPU: a ValueError naming
// the op and the channel for a scale that is not finite and > 0 or a zero point off the grid.
TEST_CASE("fake quantization qparams check: unusable scales and zero points are errors",
          "[quant][torch_ao]") {
  const KernelTable<ao::CheckQParamsKernel>& table = kernel_table(ao::kCheckQParamsKernels);
  const char* op = "fake_quantize_per_channel_affine";
  auto check = [&](std::vector<float> s, const Tensor& z) {
    const Tensor st = from_vector(s, {static_cast<std::int64_t>(s.size())});
    table(op, st)(op, st, z, false, -128, 127);
  };
  auto check_float_zp = [&](std::vector<float> s, const Tensor& z) {
    const Tensor st = from_vector(s, {static_cast<std::int64_t>(s.size())});
    table(op, st)(op, st, z, true, -128, 127);
  };
  const Tensor ok_zp = from_vector<std::int32_t>({0, -128, 127}, {3});
  CHECK_NOTHROW(check({0.1f, 1e-30f, 5.0f}, ok_zp));
  for (float bad : {0.0f, -1.0f, std::numeric_limits<float>::infinity(), std::nanf("")})
    CHECK_THROWS_WITH(check({0.1f, bad, 5.0f}, ok_zp),
                      Catch::Contains(op) && Catch::Contains("of channel 1"));
  CHECK_THROWS_AS(check({0.1f, 0.1f, 0.1f}, from_vector<std::int32_t>({0, 128, 0}, {3})),
                  ValueError);
  // A float zero point: any finite value; an integer one given as float must be an integer.
  CHECK_NOTHROW(check_float_zp({0.1f, 0.1f, 0.1f}, from_vector<float>({0.5f, -300.0f, 2.0f}, {3})));
  CHECK_THROWS_AS(
      check_float_zp({0.1f, 0.1f, 0.1f}, from_vector<float>({0.5f, std::nanf(""), 2.0f}, {3})),
      ValueError);
  CHECK_NOTHROW(check({0.1f, 0.1f, 0.1f}, from_vector<float>({1.0f, -3.0f, 2.0f}, {3})));
  CHECK_THROWS_AS(check({0.1f, 0.1f, 0.1f}, from_vector<float>({0.5f, -3.0f, 2.0f}, {3})),
                  ValueError);
}

// The GPU path's errors, on the CPU: its qparams check rejects what the CPU front rejects.
TEST_CASE("fake_quantize_device_qparams: unusable qparams and shapes are errors",
          "[quant][torch_ao]") {
  const Tensor x = from_vector<float>({0.5f, -1.0f, 2.0f, 0.0f}, {2, 2});
  auto f = [&](std::vector<float> s, std::vector<std::int32_t> z, std::int64_t axis) {
    const std::int64_t n = static_cast<std::int64_t>(s.size());
    return ao::fake_quantize_device_qparams(x, from_vector(s, {n}), from_vector(z, {n}), axis, 0,
                                            255);
  };
  CHECK_NOTHROW(f({0.1f}, {3}, -1));
  CHECK_THROWS_AS(f({0.0f}, {3}, -1), ValueError);
  CHECK_THROWS_AS(f({0.1f}, {300}, -1), ValueError);
  CHECK_THROWS_AS(f({0.1f, 0.2f}, {3, 4}, -1), ShapeError);
  CHECK_NOTHROW(f({0.1f, 0.2f}, {3, 4}, 1));
  CHECK_THROWS_WITH(f({0.1f, -0.2f}, {3, 4}, 1), Catch::Contains("of channel 1"));
  CHECK_THROWS_AS(ao::fake_quantize_device_qparams(x, from_vector<float>({0.1f}, {1}),
                                                   from_vector<std::int32_t>({0}, {1}), -1,
                                                   -(std::int64_t{1} << 31), 0),
                  ValueError);  // a range wider than 2^23
}
