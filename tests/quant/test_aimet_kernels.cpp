// AIMET affine kernels against a straightforward element-by-element reference written here:
// quantize / dequantize / quantize_dequantize forward and every gradient, for per-tensor,
// per-channel ((O,1,1,1), a middle dim, the last dim, a block of two dims), mixed scale / offset
// shapes and an encoding with no [outer, channels, inner] layout (the strided kernels), on odd
// shapes, non-contiguous inputs, float32, float64 and the double-computed 32-bit grid, with each
// combination of inputs requiring grad. Forward values and dx must be bit-exact; the per-channel
// sums of the scale / offset gradients agree to summation-order rounding and are bit-identical
// with 1 and 2 threads. Also the EncodingLayout of common encoding shapes.
#include <catch2/catch.hpp>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "ops/binary/binary.h"
#include "quant/aimet/affine_quantize.h"
#include "quant/aimet/encoding_layout.h"

using namespace qgrad;
using namespace qgrad::aimet;

namespace {

enum class Kind { Q, DQ, QDQ };

const char* kind_str(Kind k) {
  return k == Kind::Q ? "quantize" : k == Kind::DQ ? "dequantize" : "quantize_dequantize";
}

template <typename C>
C clampc(C v, C lo, C hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

// Offset of the encoding element that x's element `idx` uses (encoding broadcast from the
// trailing dims, contiguous).
std::int64_t enc_index(const Shape& idx, const Shape& enc) {
  const std::size_t lead = idx.size() - enc.size();
  std::int64_t off = 0;
  for (std::size_t d = 0; d < enc.size(); ++d)
    off = off * enc[d] + (enc[d] == 1 ? 0 : idx[lead + d]);
  return off;
}

struct RefResult {
  std::vector<double> y, dx, ds, dof;
};

// T: storage type, C: computation type (what AIMET computes in).
template <typename T, typename C>
RefResult reference(Kind kind, const Tensor& x, const Tensor& s, const Tensor& o, const Tensor& g,
                    double qmin_d, double qmax_d) {
  const std::vector<T> xv = x.to_vector<T>(), sv = s.to_vector<T>(), ov = o.to_vector<T>(),
                       gv = g.to_vector<T>();
  const C qmin = static_cast<C>(qmin_d), qmax = static_cast<C>(qmax_d);
  RefResult r;
  r.ds.assign(sv.size(), 0.0);
  r.dof.assign(ov.size(), 0.0);
  const Shape& sh = x.shape();
  Shape idx(sh.size(), 0);
  for (std::size_t i = 0; i < xv.size(); ++i) {
    std::int64_t rem = static_cast<std::int64_t>(i);
    for (std::size_t d = sh.size(); d-- > 0;) {
      idx[d] = rem % sh[d];
      rem /= sh[d];
    }
    const std::int64_t si = enc_index(idx, s.shape()), oi = enc_index(idx, o.shape());
    const C xe = static_cast<C>(xv[i]), se = static_cast<C>(sv[static_cast<std::size_t>(si)]),
            oe = static_cast<C>(ov[static_cast<std::size_t>(oi)]), ge = static_cast<C>(gv[i]);
    C y, a, b, c;
    if (kind == Kind::DQ) {
      y = (xe + oe) * se;
      a = ge * se;
      b = ge * (xe + oe);
      c = ge * se;
    } else {
      const C t = xe / se;
      const C rounded = std::nearbyint(t);
      const C shifted = rounded - oe;
      const bool in = qmin <= shifted && shifted <= qmax;
      const C m = in ? C(1) : C(0);
      const C q = clampc(shifted, qmin, qmax);
      if (kind == Kind::Q) {
        y = q;
        a = (ge * m) / se;
        b = -((ge * m) / se) * t;
        c = -(ge * m);
      } else {
        y = (q + oe) * se;
        a = ge * m;
        b = ge * (clampc(rounded, oe + qmin, oe + qmax) - t * m);
        c = ge * ((C(1) - m) * se);
      }
    }
    r.y.push_back(static_cast<double>(static_cast<T>(y)));
    r.dx.push_back(static_cast<double>(static_cast<T>(a)));
    r.ds[static_cast<std::size_t>(si)] += static_cast<double>(static_cast<T>(b));
    r.dof[static_cast<std::size_t>(oi)] += static_cast<double>(static_cast<T>(c));
  }
  for (double& v : r.ds) v = static_cast<double>(static_cast<T>(v));
  for (double& v : r.dof) v = static_cast<double>(static_cast<T>(v));
  return r;
}

struct Case {
  std::string name;
  Shape x, s, o;
  bool transpose = false;  // x built as its transpose's contiguous tensor, then .t() (2-D)
  bool slice = false;      // x a strided slice (every other element of the last dim)
  DType dt = kFloat32;
  std::int64_t qmin = 0, qmax = 255;
  bool pow2_scales = false;  // exact ties at x / s = k + 0.5
};

Tensor make_x(const Case& c, Generator& gen) {
  const TensorOptions opt = TensorOptions().dtype(c.dt);
  if (c.transpose) return mul(randn({c.x[1], c.x[0]}, gen, opt), 3.0).t();
  if (c.slice) {
    Shape wide = c.x;
    wide.back() = 2 * wide.back();
    return mul(randn(wide, gen, opt), 3.0)
        .slice(static_cast<std::int64_t>(wide.size()) - 1, 0, wide.back(), 2);
  }
  Tensor x = mul(randn(c.x, gen, opt), 3.0);
  if (c.pow2_scales) {
    // Every third element an exact tie (k + 0.5) * s for s in {0.125, 0.25, 0.5}: x / s = k + 0.5.
    std::vector<double> v = x.to_vector<double>();
    for (std::size_t i = 0; i < v.size(); i += 3) v[i] = (std::floor(v[i] * 8) + 0.5) * 0.125;
    x = from_vector(v, c.x, opt);
  }
  return x;
}

Tensor make_scale(const Case& c, Generator& gen) {
  const TensorOptions opt = TensorOptions().dtype(c.dt);
  if (c.pow2_scales) {
    std::vector<double> v(static_cast<std::size_t>(numel_of(c.s)));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.125 * static_cast<double>(1 << (i % 3));
    return from_vector(v, c.s, opt);
  }
  const double range = static_cast<double>(c.qmax - c.qmin);
  // Scales putting roughly [-8, 8] on the grid (some clamping at 3 sigma).
  return mul(uniform(c.s, 0.5, 1.5, gen, opt), 16.0 / range);
}

Tensor make_offset(const Case& c, Generator& gen) {
  const TensorOptions opt = TensorOptions().dtype(c.dt);
  std::vector<double> v = uniform(c.o, 0, 1, gen, opt).to_vector<double>();
  const double mid = -static_cast<double>(c.qmin + c.qmax) / 2;
  for (double& e : v) e = std::nearbyint(mid + (e - 0.5) * 20);
  return from_vector(v, c.o, opt);
}

Tensor run_kind(Kind k, const Tensor& x, const Tensor& s, const Tensor& o, const Case& c) {
  switch (k) {
    case Kind::Q:
      return quantize(x, s, o, c.qmin, c.qmax);
    case Kind::DQ:
      return dequantize(x, s, o);
    default:
      return quantize_dequantize(x, s, o, c.qmin, c.qmax);
  }
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

void require_close_sums(const std::vector<double>& got, const std::vector<double>& want,
                        double rel) {
  REQUIRE(got.size() == want.size());
  double scale = 0;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": " << got[i] << " vs " << want[i]);
    REQUIRE(std::fabs(got[i] - want[i]) <= rel * (std::fabs(want[i]) + scale * 1e-3) + 1e-300);
  }
}

struct Grads {
  std::vector<double> y, dx, ds, dof;
};

Grads run_case(Kind k, const Case& c, const Tensor& x, const Tensor& s, const Tensor& o,
               const Tensor& g, bool rx, bool rs, bool ro) {
  Tensor xl = x.detach().set_requires_grad(rx);
  Tensor sl = s.detach().set_requires_grad(rs);
  Tensor ol = o.detach().set_requires_grad(ro);
  Tensor y = run_kind(k, xl, sl, ol, c);
  Grads out;
  out.y = y.to_vector<double>();
  if (rx || rs || ro) {
    y.backward(g);
    if (rx) out.dx = xl.grad().to_vector<double>();
    if (rs) out.ds = sl.grad().to_vector<double>();
    if (ro) out.dof = ol.grad().to_vector<double>();
    if (!rx) CHECK_FALSE(xl.grad().defined());
    if (!rs) CHECK_FALSE(sl.grad().defined());
    if (!ro) CHECK_FALSE(ol.grad().defined());
  }
  return out;
}

void check_case(const Case& c, std::uint64_t seed) {
  Generator gen(seed);
  const Tensor x = make_x(c, gen);
  REQUIRE(x.shape() == c.x);
  const Tensor s = make_scale(c, gen), o = make_offset(c, gen);
  const Tensor g = randn(c.x, gen, TensorOptions().dtype(c.dt));
  const bool wide32 = c.dt == kFloat32 && c.qmax - c.qmin > (std::int64_t{1} << 20);
  for (Kind k : {Kind::Q, Kind::DQ, Kind::QDQ}) {
    if (k == Kind::Q && wide32) continue;  // float32 cannot hold that grid's integers
    INFO(c.name << " " << kind_str(k));
    // QuantizeDequantize of float32 on a grid finer than 2^20 steps runs in double (AIMET).
    const bool in_double = c.dt == kFloat64 || (k == Kind::QDQ && wide32);
    RefResult ref;
    if (c.dt == kFloat64)
      ref = reference<double, double>(k, x, s, o, g, c.qmin, c.qmax);
    else if (in_double)
      ref = reference<float, double>(k, x, s, o, g, c.qmin, c.qmax);
    else
      ref = reference<float, float>(k, x, s, o, g, c.qmin, c.qmax);
    const double rel = c.dt == kFloat64 ? 1e-12 : 2e-7;
    const bool flags[][3] = {{true, false, false}, {true, true, true},   {false, true, true},
                             {true, true, false},  {false, false, true}, {false, false, false}};
    for (const auto& f : flags) {
      INFO("requires grad: x " << f[0] << " scale " << f[1] << " offset " << f[2]);
      Grads by_threads[2];
      for (int threads : {1, 2}) {
        omp_set_num_threads(threads);
        by_threads[threads - 1] = run_case(k, c, x, s, o, g, f[0], f[1], f[2]);
      }
      const Grads& r = by_threads[1];
      REQUIRE(same_bits(r.y, ref.y));
      if (f[0]) REQUIRE(same_bits(r.dx, ref.dx));
      if (f[1]) require_close_sums(r.ds, ref.ds, rel);
      if (f[2]) require_close_sums(r.dof, ref.dof, rel);
      // Thread count changes nothing, not even the sums' last bits.
      REQUIRE(same_bits(by_threads[0].y, r.y));
      REQUIRE(same_bits(by_threads[0].dx, r.dx));
      REQUIRE(same_bits(by_threads[0].ds, r.ds));
      REQUIRE(same_bits(by_threads[0].dof, r.dof));
    }
  }
}

}  // namespace

TEST_CASE("aimet kernels: encoding layouts of common encoding shapes", "[quant][aimet]") {
  auto layout = [](const Shape& x, const Shape& e) {
    const auto l = encoding_layout(x, e);
    REQUIRE(l.has_value());
    return std::vector<std::int64_t>{l->outer, l->channels, l->inner};
  };
  using V = std::vector<std::int64_t>;
  CHECK(layout({4, 3, 5}, {}) == V{1, 1, 60});
  CHECK(layout({4, 3, 5}, {1}) == V{1, 1, 60});
  CHECK(layout({8, 3, 3, 3}, {8, 1, 1, 1}) == V{1, 8, 27});
  CHECK(layout({2, 16, 5, 5}, {16, 1, 1}) == V{2, 16, 25});
  CHECK(layout({7, 11}, {11}) == V{7, 11, 1});
  CHECK(layout({3, 6, 5, 4}, {6, 5, 1}) == V{3, 30, 4});
  CHECK(layout({3, 1, 6, 1, 5}, {6, 1, 5}) == V{3, 30, 1});  // size-1 dims in between
  CHECK(layout({5, 1}, {5, 1}) == V{1, 5, 1});
  CHECK(layout({1}, {1}) == V{1, 1, 1});
  // Channels not in one block, or an empty x: no layout (the strided kernels run).
  CHECK_FALSE(encoding_layout({4, 6, 5, 3}, {6, 1, 3}).has_value());
  CHECK_FALSE(encoding_layout({0, 3}, {3}).has_value());
}

TEST_CASE("aimet kernels: fast paths equal the element-by-element reference", "[quant][aimet]") {
  const int prev = omp_get_max_threads();
  std::vector<Case> cases = {
      {"per-tensor []", {5, 7, 3}, {}, {}},
      {"per-tensor [1], symmetric grid", {37}, {1}, {1}, false, false, kFloat32, -128, 127},
      {"per-tensor float64", {9, 13}, {}, {}, false, false, kFloat64},
      {"per-channel (O,1,1,1)",
       {5, 3, 3, 3},
       {5, 1, 1, 1},
       {5, 1, 1, 1},
       false,
       false,
       kFloat32,
       -8,
       7},
      {"per-channel middle dim", {3, 7, 11}, {7, 1}, {7, 1}},
      {"per-channel last dim", {9, 13}, {13}, {13}},
      {"per-channel block of two dims", {3, 6, 5, 4}, {6, 5, 1}, {6, 5, 1}},
      {"scale per channel, offset per tensor", {4, 6, 5}, {6, 1}, {}},
      {"scale per tensor, offset per channel", {4, 6, 5}, {}, {1, 5}},
      {"no layout (strided kernels)", {4, 6, 5, 3}, {6, 1, 3}, {6, 1, 3}},
      {"transposed input per tensor", {13, 9}, {}, {}, true},
      {"transposed input per channel", {13, 9}, {9}, {9}, true},
      {"sliced input per channel", {6, 4, 7}, {4, 1}, {4, 1}, false, true},
      {"float64 per channel last dim", {5, 6}, {6}, {6}, false, false, kFloat64, -128, 127},
      {"exact ties, power-of-two scales",
       {6, 45},
       {6, 1},
       {6, 1},
       false,
       false,
       kFloat32,
       0,
       255,
       true},
      {"32-bit grid in double",
       {7, 10},
       {7, 1},
       {7, 1},
       false,
       false,
       kFloat32,
       -(std::int64_t{1} << 31),
       (std::int64_t{1} << 31) - 1},
      {"16-bit grid float64", {4, 9}, {}, {}, false, false, kFloat64, 0, 65535},
  };
  std::uint64_t seed = 100;
  for (const Case& c : cases) check_case(c, seed++);
  omp_set_num_threads(prev);
}

TEST_CASE("aimet kernels: large tensors over many boxes and both threads", "[quant][aimet]") {
  // Past the parallel grain: long per-tensor rows split into 16K segments (odd remainder),
  // per-channel rows grouped into boxes, channels innermost over two channel blocks.
  const int prev = omp_get_max_threads();
  std::vector<Case> cases = {
      {"per-tensor long", {3, 40001}, {}, {}},
      {"per-channel rows", {5, 64, 301}, {64, 1}, {64, 1}, false, false, kFloat32, -128, 127},
      {"channels innermost", {301, 300}, {300}, {300}},
      {"per-tensor float64 long", {70001}, {}, {}, false, false, kFloat64},
  };
  std::uint64_t seed = 200;
  for (const Case& c : cases) check_case(c, seed++);
  omp_set_num_threads(prev);
}

TEST_CASE("aimet kernels: the mask path keeps no reference to x", "[quant][aimet]") {
  // Only x requires grad: the backward uses the forward's mask, so x may change in between.
  Tensor x = from_vector<float>({0.3f, 5.0f, -0.7f, 40.0f}).set_requires_grad(true);
  Tensor y = quantize_dequantize(x, full({}, 0.1), zeros({}), -128, 127);
  {
    NoGradGuard ng;
    x.detach().copy_(zeros({4}));
  }
  y.backward(ones({4}));
  CHECK(x.grad().to_vector<float>() == std::vector<float>{1, 1, 1, 0});
  // With a learnable scale x is saved, and changing it is an error.
  Tensor x2 = from_vector<float>({0.3f, 5.0f}).set_requires_grad(true);
  Tensor s = full({}, 0.1).set_requires_grad(true);
  Tensor y2 = quantize_dequantize(x2, s, zeros({}), -128, 127);
  {
    NoGradGuard ng;
    x2.detach().copy_(zeros({2}));
  }
  REQUIRE_THROWS_AS(y2.backward(ones({2})), AutogradError);
}
