// Tests of torch.ao's fused observer + fake quantization (quant/torch_ao/fused_obs_fake_quant.h,
// quant/modules/fused_fake_quantize.h) and of per-channel fake quantization with float zero
// points: golden fixtures written by PyTorch 1.13's own FusedMovingAvgObsFakeQuantize module and
// fake_quantize_per_channel_affine (tests/fixtures/gen_quant_ao_fused.py) compared bit for bit
// over multi-step runs (running min/max, scale, zero point, output, gradient, enable flags,
// all-zero and tiny batches), the scalar qparams rule, state-dict keys and bad-argument errors.
#include <catch2/catch.hpp>

#include <omp.h>

#include <cmath>
#include <limits>
#include <string>

#include "core/factory.h"
#include "core/host_device.h"
#include "core/npy.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "quant/modules/calibratable.h"
#include "quant/modules/fused_fake_quantize.h"
#include "quant/modules/qdq_params.h"
#include "quant/torch_ao/fake_quantize.h"
#include "quant/torch_ao/fused_obs_fake_quant.h"
#include "quant/torch_ao/fused_obs_fake_quant_math.h"
#include "support/fixtures.h"

using namespace qgrad;
using qgrad_test::require_bitwise;

namespace {

const char* kDir = "quant_ao_fused";

bool has_fixture(const std::string& name) {
  return qgrad_test::has_fixture(kDir, name);
}
Tensor load(const std::string& name) {
  return qgrad_test::load_fixture(kDir, name);
}

quant::FakeQuantizeConfig config_from(const std::vector<double>& c) {
  quant::FakeQuantizeConfig fc;
  const bool per_channel = c[0] != 0;
  fc.observer.kind = per_channel ? quant::ObserverKind::MovingAveragePerChannelMinMax
                                 : quant::ObserverKind::MovingAverageMinMax;
  const ao::QScheme schemes[] = {ao::QScheme::PerTensorAffine, ao::QScheme::PerTensorSymmetric,
                                 ao::QScheme::PerChannelAffine, ao::QScheme::PerChannelSymmetric};
  fc.observer.options =
      ao::ObserverOptions()
          .dtype(c[1] == 0 ? ao::QuantDType::QInt8 : ao::QuantDType::QUInt8)
          .qscheme(schemes[static_cast<int>(c[2])])
          .reduce_range(c[3] != 0)
          .quant_range(static_cast<std::int64_t>(c[4]), static_cast<std::int64_t>(c[5]))
          .eps(c[7]);
  fc.observer.averaging_constant = c[6];
  return fc;
}

std::vector<std::int64_t> ints(const Tensor& t) {
  return t.to_vector<std::int64_t>();
}

}  // namespace

TEST_CASE("FusedMovingAvgObsFakeQuantize matches PyTorch 1.13 over multi-step runs",
          "[quant][torch_ao][fused]") {
  int cases = 0;
  for (int i = 0; has_fixture("fused_" + std::to_string(i) + "_config"); ++i, ++cases) {
    const std::vector<double> c =
        load("fused_" + std::to_string(i) + "_config").to_vector<double>();
    quant::FusedMovingAvgObsFakeQuantize m(config_from(c));
    REQUIRE(m.quant_min() == static_cast<std::int64_t>(c[9]));
    REQUIRE(m.quant_max() == static_cast<std::int64_t>(c[10]));
    const int steps = static_cast<int>(c[8]);
    for (int k = 0; k < steps; ++k) {
      const std::string p = "fused_" + std::to_string(i) + "_s" + std::to_string(k) + "_";
      const std::vector<double> flags = load(p + "flags").to_vector<double>();
      INFO("case " << i << " step " << k << " observer " << flags[0] << " fake_quant " << flags[1]);
      m.enable_observer(flags[0] != 0);
      m.enable_fake_quant(flags[1] != 0);
      Tensor x = load(p + "x").set_requires_grad(true);
      Tensor y = m.forward(x);
      require_bitwise(y, load(p + "y"), "output");
      y.backward(load(p + "dy"));
      require_bitwise(x.grad(), load(p + "dx"), "gradient");
      require_bitwise(m.activation_post_process()->min_val().reshape({-1}), load(p + "min"),
                      "running min");
      require_bitwise(m.activation_post_process()->max_val().reshape({-1}), load(p + "max"),
                      "running max");
      require_bitwise(m.scale(), load(p + "scale"), "scale");
      REQUIRE(ints(m.zero_point()) == ints(load(p + "zp")));
    }
    // calculate_qparams is the observer's rule, as PyTorch's module returns it.
    const std::vector<double> q =
        load("fused_" + std::to_string(i) + "_qparams").to_vector<double>();
    const ao::QParams qp = m.calculate_qparams();
    const std::vector<float> s = qp.scale.to_vector<float>();
    const std::vector<double> z = qp.zero_point.to_vector<double>();
    REQUIRE(s.size() * 2 == q.size());
    for (std::size_t j = 0; j < s.size(); ++j) {
      CHECK(s[j] == static_cast<float>(q[j]));
      CHECK(z[j] == q[s.size() + j]);
    }
  }
  REQUIRE(cases >= 10);
}

TEST_CASE("fake_quantize_per_channel_affine with float zero points matches PyTorch 1.13",
          "[quant][torch_ao][fused]") {
  int cases = 0;
  for (int i = 0; has_fixture("fzp_" + std::to_string(i) + "_x"); ++i, ++cases) {
    const std::string p = "fzp_" + std::to_string(i) + "_";
    INFO("case " << i);
    const std::vector<double> prm = load(p + "params").to_vector<double>();
    Tensor x = load(p + "x").set_requires_grad(true);
    Tensor y = ao::fake_quantize_per_channel_affine(
        x, load(p + "scale"), load(p + "zp"), static_cast<std::int64_t>(prm[0]),
        static_cast<std::int64_t>(prm[1]), static_cast<std::int64_t>(prm[2]));
    require_bitwise(y, load(p + "y"), "forward");
    y.backward(load(p + "dy"));
    require_bitwise(x.grad(), load(p + "dx"), "gradient");
  }
  REQUIRE(cases >= 5);
}

TEST_CASE("choose_qparams follows ATen's ChooseQuantizationParams", "[quant][torch_ao][fused]") {
  using ao::fused::choose_qparams;
  // An empty range: scale 0.1; the zero point comes from the end with the smaller error.
  CHECK(choose_qparams(0, 0, -128, 127, false).scale == 0.1f);
  CHECK(choose_qparams(0, 0, -128, 127, false).zero_point == 127);
  CHECK(choose_qparams(0, 0, 0, 255, true).zero_point == 0);
  // Symmetric schemes put the zero point in the middle of the range (rounded half to even).
  CHECK(choose_qparams(-1, 2, -128, 127, true).zero_point == 0);
  CHECK(choose_qparams(-1, 2, 0, 255, true).zero_point == 128);
  CHECK(choose_qparams(-1, 2, 0, 127, true).zero_point == 64);
  // ... but not for one-sided data: qint8 symmetric with min >= 0 gives zero point -128.
  CHECK(choose_qparams(0.5f, 2, -128, 127, true).zero_point == -128);
  // The 6.1e-5 floor.
  CHECK(choose_qparams(-1e-6f, 1e-6f, 0, 255, false).scale == 6.1e-5f);
}

TEST_CASE("fused_moving_avg_obs_fake_quant: state, flags and errors", "[quant][torch_ao][fused]") {
  const TensorOptions i64 = TensorOptions().dtype(kInt64);
  const Tensor on = ones({1}, i64), off = zeros({1}, i64);
  const float inf = std::numeric_limits<float>::infinity();
  Tensor rmin = scalar_tensor(inf), rmax = scalar_tensor(-inf);
  Tensor scale = ones({1}), zp = zeros({1}, TensorOptions().dtype(kInt32));
  const Tensor x = from_vector<float>({-1.0f, 0.5f, 2.0f}, {3});

  SECTION("observer on, fake quant off: statistics move, qparams stay, x passes") {
    Tensor y = ao::fused_moving_avg_obs_fake_quant(x, on, off, rmin, rmax, scale, zp, 0.01, 0, 255,
                                                   -1, false, false);
    require_bitwise(y, x);
    CHECK(rmin.item<float>() == -1.0f);
    CHECK(rmax.item<float>() == 2.0f);
    CHECK(scale.item<float>() == 1.0f);
    CHECK(rmin.dim() == 0);
  }
  SECTION("empty input: nothing updated") {
    Tensor y = ao::fused_moving_avg_obs_fake_quant(empty({0}), on, on, rmin, rmax, scale, zp, 0.01,
                                                   0, 255, -1, false, false);
    CHECK(y.numel() == 0);
    CHECK(std::isinf(rmin.item<float>()));
  }
  SECTION("per channel: empty state is sized in place") {
    Tensor pmin = empty({0}), pmax = empty({0}), ps = ones({1}),
           pz = zeros({1}, TensorOptions().dtype(kInt32));
    const Tensor w = from_vector<float>({-1, 1, 2, 3, -4, 0}, {3, 2});
    ao::fused_moving_avg_obs_fake_quant(w, on, on, pmin, pmax, ps, pz, 0.01, -128, 127, 0, true,
                                        true);
    CHECK(pmin.to_vector<float>() == std::vector<float>{-1, 2, -4});
    CHECK(ps.numel() == 3);
    CHECK(pz.numel() == 3);
  }
  SECTION("bad arguments name the op and the argument") {
    CHECK_THROWS_WITH(
        ao::fused_moving_avg_obs_fake_quant(x, on, on, rmin, rmax, scale, zp, 0.01, 10, 5, -1,
                                            false, false),
        Catch::Contains("fused_moving_avg_obs_fake_quant") && Catch::Contains("quant_min"));
    CHECK_THROWS_AS(ao::fused_moving_avg_obs_fake_quant(x.to(kFloat64), on, on, rmin, rmax, scale,
                                                        zp, 0.01, 0, 255, -1, false, false),
                    DTypeError);
    const Tensor w = zeros({2, 3});
    CHECK_THROWS_WITH(
        ao::fused_moving_avg_obs_fake_quant(w, on, on, empty({0}), empty({0}), ones({1}), zp, 0.01,
                                            -128, 127, 1, true, true),
        Catch::Contains("axis 0"));
    CHECK_THROWS_WITH(ao::fused_moving_avg_obs_fake_quant(x, on, on, zeros({2}), rmax, scale, zp,
                                                          0.01, 0, 255, -1, false, false),
                      Catch::Contains("running_min"));
    const Tensor nan = from_vector<float>({std::nanf(""), 1.0f}, {2});
    CHECK_THROWS_AS(ao::fused_moving_avg_obs_fake_quant(nan, on, on, rmin, rmax, scale, zp, 0.01, 0,
                                                        255, -1, false, false),
                    ValueError);
  }
}

// The batch min/max is taken in vector lanes; it must be the value a sequential scan keeps (the
// first element equal to the extreme), including the sign of a zero extreme, at every length and
// position (lane, tail), and NaN anywhere must be seen.
TEST_CASE("fused_moving_avg_obs_fake_quant: batch min/max as a sequential scan",
          "[quant][torch_ao][fused]") {
  const TensorOptions i64 = TensorOptions().dtype(kInt64);
  const Tensor on = ones({1}, i64), off = zeros({1}, i64);
  const float inf = std::numeric_limits<float>::infinity();
  auto observe = [&](const std::vector<float>& v) {
    Tensor rmin = scalar_tensor(inf), rmax = scalar_tensor(-inf);
    Tensor scale = ones({1}), zp = zeros({1}, TensorOptions().dtype(kInt32));
    ao::fused_moving_avg_obs_fake_quant(
        from_vector<float>(v, {static_cast<std::int64_t>(v.size())}), on, off, rmin, rmax, scale,
        zp, 0.01, 0, 255, -1, false, false);
    return std::make_pair(rmin.item<float>(), rmax.item<float>());
  };
  for (std::size_t n : {1u, 15u, 16u, 17u, 40u, 100u}) {
    for (std::size_t first = 0; first < n; first += 3) {
      // Non-negative values whose first zero is -0.0 at `first`, +0.0 zeros after it.
      std::vector<float> v(n, 1.5f);
      for (std::size_t i = first; i < n; i += 5) v[i] = 0.0f;
      v[first] = -0.0f;
      auto r = observe(v);
      CHECK(r.first == 0.0f);
      CHECK(std::signbit(r.first));
      // Non-positive values: the max is the first zero, +0.0 here and -0.0 after it.
      for (float& e : v) e = e == 0.0f ? -0.0f : -2.0f;
      v[first] = 0.0f;
      r = observe(v);
      CHECK(r.second == 0.0f);
      CHECK(!std::signbit(r.second));
      // A NaN at any position makes the statistics NaN.
      std::vector<float> w(n, 1.0f);
      w[first] = std::nanf("");
      r = observe(w);
      CHECK(std::isnan(r.first));
      CHECK(std::isnan(r.second));
    }
  }
  std::vector<float> v(37);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 7) % 37) - 11.0f;
  CHECK(observe(v) == std::make_pair(-11.0f, 25.0f));
}

// The range the CPU's chunks and the GPU's blocks combine (fused_obs_fake_quant_math.h): split at
// any points and combined in any order, including the pairwise tree of a block reduction, it
// gives the sequential scan's min and max bit for bit, the sign of a zero extreme included.
TEST_CASE("fused observer range: any split and combining order gives the sequential scan's bits",
          "[quant][torch_ao][fused]") {
  namespace fused = ao::fused;
  Generator gen(5);
  auto bits = [](float v) { return hd::bits_of(v); };
  for (int trial = 0; trial < 200; ++trial) {
    const std::int64_t n = 1 + static_cast<std::int64_t>(randint(0, 300, {1}, gen).item<double>());
    const std::vector<double> u = rand({n}, gen).to_vector<double>();
    const bool non_negative = trial % 3 == 0, non_positive = trial % 3 == 1;
    std::vector<float> v(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < v.size(); ++i) {
      const double r = u[i];
      float e = r < 0.2 ? -0.0f : r < 0.4 ? 0.0f : static_cast<float>(r * 8 - 4);
      if (non_negative && e < 0) e = -0.0f;
      if (non_positive && e > 0) e = 0.0f;
      v[i] = e;
    }
    // The sequential scan of PyTorch's CPU aminmax.
    float smin = v[0], smax = v[0];
    for (float e : v) {
      smin = e < smin ? e : smin;
      smax = e > smax ? e : smax;
    }
    // Chunks of a random size, each accumulated on its own, then combined in two orders.
    const std::int64_t chunk = 1 + trial % 17;
    std::vector<fused::ObservedRange> parts;
    for (std::int64_t b = 0; b < n; b += chunk) {
      fused::ObservedRange r = fused::empty_range();
      for (std::int64_t i = std::min(n, b + chunk) - 1; i >= b; --i)  // backwards, on purpose
        fused::observe_element(r, v[static_cast<std::size_t>(i)], i);
      parts.push_back(r);
    }
    fused::ObservedRange backward = fused::empty_range();
    for (auto it = parts.rbegin(); it != parts.rend(); ++it)
      backward = fused::combine(backward, *it);
    std::vector<fused::ObservedRange> tree = parts;  // pairwise, as a block reduction
    while (tree.size() > 1) {
      std::vector<fused::ObservedRange> next;
      for (std::size_t i = 0; i + 1 < tree.size(); i += 2)
        next.push_back(fused::combine(tree[i + 1], tree[i]));
      if (tree.size() % 2) next.push_back(tree.back());
      tree = next;
    }
    for (const fused::ObservedRange& r : {backward, tree[0]}) {
      const float zero =
          r.first_zero == fused::kNoZero ? 0.0f : v[static_cast<std::size_t>(r.first_zero)];
      INFO("trial " << trial << ", n " << n);
      CHECK(bits(fused::batch_min(r, zero)) == bits(smin));
      CHECK(bits(fused::batch_max(r, zero)) == bits(smax));
    }
  }
}

// Above 32768 elements the CPU observes a tensor in chunks: a -0.0 first zero in a later chunk
// still gives the sequential scan's sign.
TEST_CASE("fused_moving_avg_obs_fake_quant: chunked min/max keeps the first zero's sign",
          "[quant][torch_ao][fused]") {
  const TensorOptions i64 = TensorOptions().dtype(kInt64);
  const Tensor on = ones({1}, i64), off = zeros({1}, i64);
  const float inf = std::numeric_limits<float>::infinity();
  const std::int64_t n = 200000;
  for (const std::int64_t first : {std::int64_t{5}, std::int64_t{70000}, n - 1}) {
    std::vector<float> v(static_cast<std::size_t>(n), 3.0f);
    for (std::int64_t i = first + 1; i < n; i += 1000) v[static_cast<std::size_t>(i)] = 0.0f;
    v[static_cast<std::size_t>(first)] = -0.0f;
    Tensor rmin = scalar_tensor(inf), rmax = scalar_tensor(-inf);
    Tensor scale = ones({1}), zp = zeros({1}, TensorOptions().dtype(kInt32));
    ao::fused_moving_avg_obs_fake_quant(from_vector<float>(v, {n}), on, off, rmin, rmax, scale, zp,
                                        0.01, 0, 255, -1, false, false);
    INFO("first zero at " << first);
    CHECK(rmin.item<float>() == 0.0f);
    CHECK(std::signbit(rmin.item<float>()));
    CHECK(rmax.item<float>() == 3.0f);
  }
}

// Per-tensor quint8 [0, 255] state of the fused op after a warm-up on [-1, 1]: the running range
// then stays near it (averaging constant 0.01), so wider inputs fall partly outside the grid
// (mask 0).
struct WarmPerTensor {
  Tensor on = ones({1}, TensorOptions().dtype(kInt64));
  Tensor rmin = scalar_tensor(std::numeric_limits<float>::infinity());
  Tensor rmax = scalar_tensor(-std::numeric_limits<float>::infinity());
  Tensor scale = ones({1}), zp = zeros({1}, TensorOptions().dtype(kInt32));
  WarmPerTensor() { (*this)(from_vector<float>({-1.0f, 1.0f}, {2})); }
  Tensor operator()(const Tensor& x) {
    return ao::fused_moving_avg_obs_fake_quant(x, on, on, rmin, rmax, scale, zp, 0.01, 0, 255, -1,
                                               false, false);
  }
};

// The backward masks the incoming gradient in place when nothing else holds it; a gradient that
// is also kept elsewhere (retain_grad) must stay as it was.
TEST_CASE("fused_moving_avg_obs_fake_quant: backward in place only on an unshared gradient",
          "[quant][torch_ao][fused]") {
  WarmPerTensor fused;  // -3 and 5 fall outside its grid (mask 0), the rest inside
  const Tensor x =
      from_vector<float>({-3.0f, -0.5f, 0.25f, 0.9f, 5.0f}, {5}).set_requires_grad(true);
  const std::vector<float> expected{0.0f, 3.0f, 3.0f, 3.0f, 0.0f};
  for (bool retain : {false, true}) {
    x.set_grad(Tensor());
    Tensor y = fused(x);
    if (retain) y.retain_grad();
    sum(mul(y, 3.0)).backward();
    CHECK(x.grad().to_vector<float>() == expected);
    if (retain) CHECK(y.grad().to_vector<float>() == std::vector<float>(5, 3.0f));
  }
}

TEST_CASE(
    "fused_moving_avg_obs_fake_quant: per tensor, the packed gradient mask of a large input is "
    "fake_quantize_per_tensor_affine's, element for element",
    "[quant][torch_ao][fused]") {
  // Much of the wider input falls outside the warm grid. 200,003 elements: full 64-element
  // blocks over both threads and a partial last block and byte.
  WarmPerTensor fused;
  Generator gen(21);
  const Tensor x0 = uniform({200003}, -3, 3, gen);
  const Tensor dy = uniform({200003}, -1, 1, gen);
  Tensor x = x0.clone().set_requires_grad(true);
  Tensor y = fused(x);
  y.backward(dy);
  // The same grid through the unfused op (byte mask).
  Tensor xr = x0.clone().set_requires_grad(true);
  Tensor yr = ao::fake_quantize_per_tensor_affine(xr, fused.scale.item<double>(),
                                                  fused.zp.item<std::int64_t>(), 0, 255);
  yr.backward(dy);
  CHECK(y.to_vector<float>() == yr.to_vector<float>());
  const std::vector<float> g = x.grad().to_vector<float>(), gr = xr.grad().to_vector<float>();
  CHECK(g == gr);
  std::size_t zeros_in_mask = 0;
  for (float v : gr) zeros_in_mask += v == 0.0f;
  CHECK(zeros_in_mask > 50000);  // both mask values are exercised
  CHECK(zeros_in_mask < 150000);
}

namespace {

// Everything one per-tensor call of the fused op produces, as bits.
struct FusedRun {
  std::vector<std::uint32_t> y, dx, state;
  std::int64_t zp = 0;
  bool threw = false;
};

std::vector<std::uint32_t> float_bits(const Tensor& t) {
  std::vector<std::uint32_t> b;
  for (float v : t.to_vector<float>()) b.push_back(hd::bits_of(v));
  return b;
}

FusedRun fused_run(const Tensor& x0, const Tensor& dy, int threads, bool observe, bool fake_quant) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  const TensorOptions i64 = TensorOptions().dtype(kInt64);
  const Tensor obs = full({1}, observe ? 1.0 : 0.0, i64),
               fq = full({1}, fake_quant ? 1.0 : 0.0, i64);
  // A warm state (not the first step), so the moving average and qparams both matter.
  Tensor rmin = scalar_tensor(-0.75f), rmax = scalar_tensor(1.25f);
  Tensor scale = ones({1}), zp = zeros({1}, TensorOptions().dtype(kInt32));
  FusedRun r;
  Tensor x = x0.clone().set_requires_grad(true);
  try {
    Tensor y = ao::fused_moving_avg_obs_fake_quant(x, obs, fq, rmin, rmax, scale, zp, 0.01, 0, 255,
                                                   -1, false, false);
    y.backward(dy);
    r.y = float_bits(y);
    r.dx = float_bits(x.grad());
  } catch (const ValueError&) {
    r.threw = true;
  }
  omp_set_num_threads(before);
  for (const Tensor& t : {rmin, rmax, scale}) r.state.push_back(float_bits(t.reshape({1}))[0]);
  r.zp = zp.item<std::int64_t>();
  return r;
}

}  // namespace

// Per tensor the CPU observes, chooses the qparams and writes the output and mask in one
// parallel region (or none below its size threshold): the result is the same bits on any number
// of threads, for every combination of the flags and for a NaN input (a ValueError after the
// statistics became NaN), at sizes on both sides of the threshold.
TEST_CASE("fused_moving_avg_obs_fake_quant: per tensor, the same bits on 1, 2 and 3 threads",
          "[quant][torch_ao][fused]") {
  Generator gen(23);
  for (const std::int64_t n :
       {std::int64_t{1000}, std::int64_t{32767}, std::int64_t{32768}, std::int64_t{131073}}) {
    Tensor x = uniform({n}, -3, 3, gen);
    const Tensor dy = uniform({n}, -1, 1, gen);
    for (const bool nan : {false, true}) {
      if (nan) {
        std::vector<float> v = x.to_vector<float>();
        v[static_cast<std::size_t>(n * 2 / 3)] = std::nanf("");
        x = from_vector<float>(v, {n});
      }
      for (const bool observe : {false, true}) {
        for (const bool fake_quant : {false, true}) {
          INFO("n " << n << ", NaN " << nan << ", observe " << observe << ", fake_quant "
                    << fake_quant);
          const FusedRun one = fused_run(x, dy, 1, observe, fake_quant);
          CHECK(one.threw == (nan && observe && fake_quant));
          if (!fake_quant) {
            CHECK(one.y == float_bits(x));
            CHECK(one.dx == float_bits(dy));
          }
          for (const int threads : {2, 3}) {
            const FusedRun t = fused_run(x, dy, threads, observe, fake_quant);
            CHECK(t.threw == one.threw);
            CHECK(t.y == one.y);
            CHECK(t.dx == one.dx);
            CHECK(t.state == one.state);
            CHECK(t.zp == one.zp);
          }
        }
      }
    }
  }
}

TEST_CASE("FusedMovingAvgObsFakeQuantize module: PyTorch's state and checks",
          "[quant][torch_ao][fused]") {
  quant::FusedMovingAvgObsFakeQuantize act(quant::default_qat_activation_config());
  CHECK(act.quant_min() == 0);
  CHECK(act.quant_max() == 127);
  const auto sd = act.state_dict();
  for (const char* k : {"fake_quant_enabled", "observer_enabled", "scale", "zero_point",
                        "activation_post_process.eps", "activation_post_process.min_val",
                        "activation_post_process.max_val"})
    CHECK(sd.find(k) != nullptr);
  CHECK(sd.find("fake_quant_enabled")->dtype() == kInt64);
  CHECK(act.activation_post_process()->name() == "MovingAverageMinMaxObserver");

  quant::FusedMovingAvgObsFakeQuantize w(quant::default_qat_weight_config());
  CHECK(w.is_per_channel());
  CHECK(w.is_symmetric_quant());
  Tensor y = w.forward(from_vector<float>({-1, 1, 2, 3}, {2, 2}));
  CHECK(w.scale().numel() == 2);

  quant::FakeQuantizeConfig bad = quant::default_fused_act_fake_quant_config();
  bad.observer.kind = quant::ObserverKind::MinMax;
  CHECK_THROWS_WITH(quant::FusedMovingAvgObsFakeQuantize(bad),
                    Catch::Contains("MovingAverageMinMaxObserver"));
  quant::FakeQuantizeConfig axis1 = quant::default_qat_weight_config();
  axis1.observer.ch_axis = 1;
  CHECK_THROWS_AS(quant::FusedMovingAvgObsFakeQuantize(axis1), ValueError);
}

TEST_CASE("FusedMovingAvgObsFakeQuantize: int8 and ONNX read the qparams its forward uses",
          "[quant][torch_ao][fused]") {
  // After calibration (observer on, fake quantization off) the stored scale and zero point are
  // still the initial 1 and 0: int8 conversion read them while fake-quant evaluation chose new
  // ones from the running min/max.
  for (const bool per_channel : {false, true}) {
    INFO("per channel " << per_channel);
    quant::FusedMovingAvgObsFakeQuantize fq(per_channel ? quant::default_qat_weight_config()
                                                        : quant::default_qat_activation_config());
    CHECK_THROWS_WITH(quant::qdq_params(fq, "convert", "layer 0"),
                      Catch::Contains("convert: layer 0") && Catch::Contains("saw no data"));
    fq.start_calibration();
    const Tensor x = from_vector<float>({-0.5f, 0.25f, 1.5f, 3.0f, -2.0f, 0.75f}, {2, 3});
    fq.forward(x);
    fq.finish_calibration(quant::CalibrationOptions{});
    const quant::QdqParams before = quant::qdq_params(fq, "convert", "layer 0");
    CHECK(fq.scale().to_vector<float>()[0] == 1.0f);  // stale until the next forward
    // The forward with fake quantization on (statistics frozen, as in evaluation) chooses the
    // qparams and stores them: the same ones conversion read before it ran.
    fq.disable_observer();
    fq.forward(x);
    CHECK(before.scale == fq.scale().to_vector<float>());
    CHECK(before.zero_point == fq.zero_point().to_vector<std::int32_t>());
    CHECK(before.scale.size() == (per_channel ? 2u : 1u));
    CHECK(before.scale[0] != 1.0f);
  }
}
