// int8 layers (deploy/int8) against references in plain integer C++: the int32 accumulator
// sum (x - zp_in) * w, requantised in double as real / scale_out rounded half to even, ReLU,
// zero point and clamp to the grid. oneDNN requantises in float32, so an output may differ by
// one step where the exact value lies within 1e-3 of a rounding tie; everywhere else the int8
// layers must agree exactly. The direct convolution (few inputs per output, max pool fused) must
// give oneDNN's convolution and pooling bit for bit. Also the quantize step against torch.ao's own
// fake-quant kernel, Int8QuantizeStep against Int8Quantize, max pooling, and errors for bad specs
// and inputs.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "core/factory.h"
#include "deploy/int8/int8_add.h"
#include "deploy/int8/int8_conv2d.h"
#include "deploy/int8/int8_direct_conv2d.h"
#include "deploy/int8/int8_linear.h"
#include "deploy/int8/int8_max_pool2d.h"
#include "deploy/int8/int8_quantize.h"
#include "ops/binary/binary.h"
#include "quant/torch_ao/fake_quantize.h"

using namespace qgrad;
using quant::Int8Grid;

namespace {

Int8Grid grid(float scale, std::int32_t zp, std::int64_t lo, std::int64_t hi) {
  Int8Grid g;
  g.scale = scale;
  g.zero_point = zp;
  g.quant_min = lo;
  g.quant_max = hi;
  return g;
}

// Random grid values in [lo, hi], as an NHWC tensor of shape [n, c, h, w] (what the int8 layers
// write) and the same values in NCHW order.
struct Activation {
  Tensor t;
  std::vector<int> nchw;
};

Activation random_activation(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w,
                             const Int8Grid& g, std::uint64_t seed) {
  Generator gen(seed);
  const Tensor r = randint(g.quant_min, g.quant_max + 1, {n, c, h, w}, gen);
  Activation a;
  for (std::int64_t v : r.to_vector<std::int64_t>()) a.nchw.push_back(static_cast<int>(v));
  // NHWC storage, viewed as NCHW.
  a.t = r.permute({0, 2, 3, 1}).contiguous().to(g.dtype()).permute({0, 3, 1, 2});
  return a;
}

std::vector<std::int8_t> random_weights(std::size_t count, std::uint64_t seed) {
  Generator gen(seed);
  std::vector<std::int8_t> w;
  for (std::int64_t v :
       randint(-128, 128, {static_cast<std::int64_t>(count)}, gen).to_vector<std::int64_t>())
    w.push_back(static_cast<std::int8_t>(v));
  return w;
}

// The grid value of the real value real = v * scale_out, with the ReLU and the grid's bounds.
struct Expected {
  int q;
  bool near_tie;
};
Expected requantize(double v, const Int8Grid& g, bool relu) {
  if (relu) v = std::max(v, 0.0);
  const double r = std::nearbyint(v);  // half to even (default rounding mode)
  const double frac = v - std::floor(v);
  const double q = std::clamp(r + g.zero_point, double(g.quant_min), double(g.quant_max));
  return {static_cast<int>(q), std::abs(frac - 0.5) < 1e-3};
}

// Compares the int8 output (NCHW order) with the references: exact away from ties, one step at
// most near one. Returns how many outputs were near a tie.
int compare(const std::vector<int>& got, const std::vector<Expected>& want) {
  REQUIRE(got.size() == want.size());
  int ties = 0, mismatches = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (want[i].near_tie) {
      ++ties;
      if (std::abs(got[i] - want[i].q) > 1) ++mismatches;
    } else if (got[i] != want[i].q) {
      ++mismatches;
    }
  }
  CHECK(mismatches == 0);
  return ties;
}

std::vector<int> ints_of(const Tensor& t) {
  std::vector<int> v;
  for (std::int64_t x : t.contiguous().to(DType::Int64).to_vector<std::int64_t>())
    v.push_back(static_cast<int>(x));
  return v;
}

}  // namespace

TEST_CASE(
    "int8 conv2d: u8 affine input, padding, stride, BN-signed scales, ReLU, reduce_range "
    "output equal the integer reference",
    "[int8]") {
  // 1, 3 and 5 input channels: zero-padded to a multiple of 4 for oneDNN's fast kernels.
  const std::int64_t c = GENERATE(1, 3, 5, 8);
  const std::int64_t n = 2, h = 9, w = 8, o = 7, k = 3;
  INFO("input channels " << c);
  const Int8Grid in = grid(0.05f, 61, 0, 127);  // torch.ao quint8 with reduce_range
  const Int8Grid out = grid(0.02f, 9, 0, 127);
  const Activation x = random_activation(n, c, h, w, in, 1);
  quant::Int8Conv2dSpec s;
  s.name = "test conv";
  s.in_channels = c;
  s.out_channels = o;
  s.kernel = {k, k};
  s.stride = {2, 1};
  s.padding = {1, 1};
  s.weight = random_weights(static_cast<std::size_t>(o * c * k * k), 2);
  for (std::int64_t i = 0; i < o; ++i) {
    s.weight_scale.push_back((i % 3 == 1 ? -1.0 : 1.0) * 4e-4 * double(i + 1));  // BN gamma < 0
    s.bias.push_back(0.05 * double(i) - 0.15);
  }
  s.input = in;
  s.output = out;
  s.relu = GENERATE(false, true);
  INFO("relu " << s.relu);
  quant::Int8Conv2d conv(s);
  const Tensor y = conv.forward(x.t);
  const std::int64_t oh = (h + 2 - k) / 2 + 1, ow = (w + 2 - k) / 1 + 1;
  REQUIRE(y.shape() == Shape{n, o, oh, ow});
  REQUIRE(y.dtype() == DType::UInt8);
  CHECK(!conv.impl_info().empty());
  // Where oneDNN has a fast int8 kernel for 4 channels, every channel count gets one.
  if (c % 4 != 0) {
    quant::Int8Conv2dSpec s4 = s;
    s4.in_channels = 4;
    s4.weight.assign(static_cast<std::size_t>(o * 4 * k * k), 1);
    quant::Int8Conv2d conv4(s4);
    conv4.forward(random_activation(n, 4, h, w, in, 3).t);
    INFO("impl " << conv.impl_info() << ", with 4 channels " << conv4.impl_info());
    if (conv4.impl_info().rfind("ref", 0) != 0) CHECK(conv.impl_info().rfind("ref", 0) != 0);
  }

  std::vector<Expected> want;
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t oc = 0; oc < o; ++oc)
      for (std::int64_t oy = 0; oy < oh; ++oy)
        for (std::int64_t ox = 0; ox < ow; ++ox) {
          std::int64_t acc = 0;
          for (std::int64_t ic = 0; ic < c; ++ic)
            for (std::int64_t ky = 0; ky < k; ++ky)
              for (std::int64_t kx = 0; kx < k; ++kx) {
                const std::int64_t iy = oy * 2 - 1 + ky, ix = ox - 1 + kx;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;  // padding: real 0
                const int q = x.nchw[((b * c + ic) * h + iy) * w + ix];
                acc += (q - in.zero_point) * s.weight[((oc * c + ic) * k + ky) * k + kx];
              }
          const double real = double(in.scale) * s.weight_scale[oc] * double(acc) + s.bias[oc];
          want.push_back(requantize(real / out.scale, out, s.relu));
        }
  const std::vector<int> got = ints_of(y);
  const int ties = compare(got, want);
  CHECK(ties < static_cast<int>(got.size()) / 50);
  // The test exercises the whole grid: values at both bounds and many in between.
  const std::set<int> distinct(got.begin(), got.end());
  CHECK(distinct.size() > 40);
  CHECK(distinct.count(127) == 1);
  CHECK(distinct.count(s.relu ? out.zero_point : 0) == 1);
}

TEST_CASE("int8 conv2d: a residual added by the sum post-op, with its own grid and zero point",
          "[int8]") {
  const std::int64_t n = 2, c = 4, h = 6, w = 5, o = 8;
  const Int8Grid in = grid(0.05f, 30, 0, 127), out = grid(0.04f, 3, 0, 127);
  const Int8Grid res = grid(0.03f, 17, 0, 255);
  const Activation x = random_activation(n, c, h, w, in, 21);
  const Activation r = random_activation(n, o, h, w, res, 22);
  quant::Int8Conv2dSpec s;
  s.name = "test conv";
  s.in_channels = c;
  s.out_channels = o;
  s.kernel = {3, 3};
  s.padding = {1, 1};
  s.weight = random_weights(static_cast<std::size_t>(o * c * 9), 23);
  for (std::int64_t i = 0; i < o; ++i) {
    s.weight_scale.push_back(2e-4 * double(i + 1));
    s.bias.push_back(0.1 - 0.03 * double(i));
  }
  s.input = in;
  s.output = out;
  s.relu = true;
  s.residual = res;
  quant::Int8Conv2d conv(s);
  CHECK_THROWS_WITH(conv.forward(x.t), Catch::Contains("call forward(x, residual)"));
  const Tensor y = conv.forward(x.t, r.t);
  std::vector<Expected> want;
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t oc = 0; oc < o; ++oc)
      for (std::int64_t oy = 0; oy < h; ++oy)
        for (std::int64_t ox = 0; ox < w; ++ox) {
          std::int64_t acc = 0;
          for (std::int64_t ic = 0; ic < c; ++ic)
            for (std::int64_t ky = 0; ky < 3; ++ky)
              for (std::int64_t kx = 0; kx < 3; ++kx) {
                const std::int64_t iy = oy - 1 + ky, ix = ox - 1 + kx;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                acc += (x.nchw[((b * c + ic) * h + iy) * w + ix] - in.zero_point) *
                       s.weight[((oc * c + ic) * 3 + ky) * 3 + kx];
              }
          const std::size_t at = static_cast<std::size_t>(((b * o + oc) * h + oy) * w + ox);
          const double real = double(in.scale) * s.weight_scale[oc] * double(acc) + s.bias[oc] +
                              double(res.scale) * (r.nchw[at] - res.zero_point);
          want.push_back(requantize(real / out.scale, out, true));
        }
  const std::vector<int> got = ints_of(y);
  compare(got, want);
  const std::set<int> distinct(got.begin(), got.end());
  CHECK(distinct.size() > 40);
  CHECK(distinct.count(out.zero_point) == 1);
}

TEST_CASE("int8 conv2d: s8 symmetric input to float32 output (pytorch_quantization logits)",
          "[int8]") {
  const Int8Grid in = grid(0.1f, 0, -128, 127);
  const Activation x = random_activation(1, 3, 6, 6, in, 3);
  quant::Int8Conv2dSpec s;
  s.name = "test conv";
  s.in_channels = 3;
  s.out_channels = 4;
  s.kernel = {3, 3};
  s.weight = random_weights(4 * 3 * 9, 4);
  s.weight_scale = {0.01, 0.02, 0.03, 0.04};
  s.bias = {1, -1, 0.5, 0};
  s.input = in;
  quant::Int8Conv2d conv(s);
  const Tensor y = conv.forward(x.t);
  REQUIRE(y.dtype() == DType::Float32);
  const std::vector<float> got = y.contiguous().to_vector<float>();
  std::size_t i = 0;
  for (int oc = 0; oc < 4; ++oc)
    for (int oy = 0; oy < 4; ++oy)
      for (int ox = 0; ox < 4; ++ox, ++i) {
        std::int64_t acc = 0;
        for (int ic = 0; ic < 3; ++ic)
          for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx)
              acc += x.nchw[(ic * 6 + oy + ky) * 6 + ox + kx] *
                     s.weight[((oc * 3 + ic) * 3 + ky) * 3 + kx];
        const double want = 0.1 * s.weight_scale[oc] * double(acc) + s.bias[oc];
        CHECK(got[i] == Approx(want).epsilon(1e-6).margin(1e-6));
      }
}

TEST_CASE(
    "int8 linear: input zero point folded into the bias, output zero point and grid "
    "bounds, 2-D, NHWC and NCHW image input",
    "[int8]") {
  const std::int64_t n = 3, c = 4, h = 3, w = 2, k = c * h * w, o = 11;
  const Int8Grid in = grid(0.03f, 40, 0, 255);
  const Int8Grid out = grid(0.05f, 70, 0, 127);
  const Activation x = random_activation(n, c, h, w, in, 5);
  quant::Int8LinearSpec s;
  s.name = "test linear";
  s.in_features = k;
  s.out_features = o;
  s.weight = random_weights(static_cast<std::size_t>(o * k), 6);
  for (std::int64_t i = 0; i < o; ++i) {
    s.weight_scale.push_back(2e-3 * double(i + 1));
    s.bias.push_back(0.2 * double(i) - 1.0);
  }
  s.input = in;
  s.output = out;
  std::vector<Expected> want;
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t j = 0; j < o; ++j) {
      std::int64_t acc = 0;
      for (std::int64_t i = 0; i < k; ++i)
        acc += (x.nchw[b * k + i] - in.zero_point) * s.weight[j * k + i];
      want.push_back(
          requantize((double(in.scale) * s.weight_scale[j] * double(acc) + s.bias[j]) / out.scale,
                     out, false));
    }
  quant::Int8Linear linear(s);
  SECTION("flattened NHWC image input") {
    const Tensor y = linear.forward(x.t);
    REQUIRE(y.shape() == Shape{n, o});
    compare(ints_of(y), want);
  }
  SECTION("NCHW image input") {
    const Tensor y = linear.forward(x.t.contiguous());
    compare(ints_of(y), want);
  }
  SECTION("2-D input") {
    const Tensor y = linear.forward(x.t.contiguous().view({n, k}));
    const std::vector<int> got = ints_of(y);
    compare(got, want);
    const std::set<int> distinct(got.begin(), got.end());
    CHECK(distinct.count(127) == 1);  // the reduce_range bound, not uint8's 255
    CHECK(distinct.size() > 10);
  }
}

TEST_CASE(
    "int8 direct conv2d: the grid values of oneDNN's int8 convolution and max pooling, bit for "
    "bit",
    "[int8]") {
  struct Case {
    std::int64_t c, o, k, pad, h, w, pool;
  };
  // One block of output channels and two (11 > 8); rows of 16 columns or more (vectors, with
  // 8- and 16-lane tails) and narrower (one output at a time); pools of 2 (in registers) and 3.
  const Case k = GENERATE(Case{1, 6, 5, 0, 28, 28, 2}, Case{1, 6, 5, 0, 28, 28, 1},
                          Case{2, 11, 3, 1, 9, 21, 2}, Case{3, 4, 3, 1, 9, 30, 1},
                          Case{1, 8, 3, 0, 10, 12, 2}, Case{1, 5, 5, 2, 13, 13, 3});
  const bool u8_in = GENERATE(true, false);
  const bool relu = GENERATE(true, false);
  INFO("c " << k.c << " o " << k.o << " k " << k.k << " pad " << k.pad << " " << k.h << "x" << k.w
            << " pool " << k.pool << (u8_in ? " u8" : " s8") << " input, relu " << relu);
  const Int8Grid in = u8_in ? grid(0.05f, 61, 0, 255) : grid(0.04f, -5, -128, 127);
  const Int8Grid out = relu ? grid(0.02f, 9, 0, 127) : grid(0.03f, 0, -128, 127);
  const Activation x = random_activation(3, k.c, k.h, k.w, in, 11);
  quant::Int8Conv2dSpec s;
  s.name = "layer '0' (QuantConv2d)";
  s.in_channels = k.c;
  s.out_channels = k.o;
  s.kernel = {k.k, k.k};
  s.padding = {k.pad, k.pad};
  s.weight = random_weights(static_cast<std::size_t>(k.o * k.c * k.k * k.k), 12);
  for (std::int64_t i = 0; i < k.o; ++i) {
    s.weight_scale.push_back((i % 3 == 1 ? -1.0 : 1.0) * 3e-4 * double(i + 2));  // BN gamma < 0
    s.bias.push_back(0.04 * double(i) - 0.1);
  }
  s.input = in;
  s.output = out;
  s.relu = relu;
  REQUIRE(quant::Int8DirectConv2d::supports(s));
  std::optional<quant::Int8MaxPool2dSpec> pool;
  if (k.pool > 1) {
    quant::Int8MaxPool2dSpec p;
    p.name = "layer '3' (MaxPool2d)";
    p.kernel = p.stride = {k.pool, k.pool};
    pool = p;
  }
  // Both kernels: int8 dot products (where the build has VNNI and VBMI) and float32 FMAs.
  const bool integer = GENERATE(true, false);
  INFO("integer kernel " << integer << " (built: " << quant::Int8DirectConv2d::has_integer_kernel()
                         << ")");
  quant::Int8DirectConv2dOptions options;
  options.integer_kernel = integer;
  quant::Int8DirectConv2d direct(s, pool, options);
  const Tensor got = direct.forward(x.t);
  quant::Int8Conv2d conv(s);
  Tensor want = conv.forward(x.t);
  if (pool) want = quant::Int8MaxPool2d(*pool).forward(want);
  REQUIRE(got.shape() == want.shape());
  REQUIRE(got.dtype() == want.dtype());
  CHECK(got.strides() == want.strides());  // NHWC, as every int8 layer writes
  const std::vector<int> a = ints_of(got), b = ints_of(want);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
  CHECK(differ == 0);
  const std::set<int> distinct(a.begin(), a.end());
  CHECK(distinct.size() > 20);  // the outputs cover the grid, not a few saturated values
  CHECK(direct.impl_info().find("qgrad direct conv") == 0);
  CHECK((direct.impl_info().find("VNNI") != std::string::npos) ==
        (integer && quant::Int8DirectConv2d::has_integer_kernel()));

  // The model's first layer: float32 in, quantized in the same pass as Int8Quantize would.
  Generator gen(13);
  const Tensor xf = randn({3, k.c, k.h, k.w}, gen) * 2.0;
  quant::Int8DirectConv2dOptions entry_options = options;
  entry_options.quantize_input = true;
  quant::Int8DirectConv2d entry(s, pool, entry_options);
  const Tensor from_float = entry.forward(xf);
  const Tensor two_steps = direct.forward(quant::Int8Quantize("input", in).forward(xf));
  CHECK(ints_of(from_float) == ints_of(two_steps));
}

TEST_CASE("int8 quantize step: Int8Quantize's arithmetic value for value, near ties included",
          "[int8]") {
  const Int8Grid g = GENERATE(grid(0.0213f, 61, 0, 127), grid(0.05f, 0, 0, 255),
                              grid(0.017f, -3, -128, 127), grid(0.3f, 128, 0, 255));
  INFO(g.str());
  Generator gen(5);
  std::vector<float> xs = (randn({20000}, gen) * 3.0).to_vector<float>();
  // Values a hair either side of every half step: rounding and the zero point's float add decide.
  for (int k = -300; k <= 300; ++k)
    for (float d : {-1e-6f, -3e-7f, 0.0f, 3e-7f, 1e-6f}) xs.push_back((k + 0.5f + d) * g.scale);
  const Tensor x = from_vector<float>(xs).reshape({1, 1, 1, static_cast<std::int64_t>(xs.size())});
  const std::vector<int> want = ints_of(quant::Int8Quantize("input", g).forward(x));
  const quant::Int8QuantizeStep step(g);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) differ += static_cast<int>(step(xs[i])) != want[i];
  CHECK(differ == 0);
}

TEST_CASE(
    "int8 quantize: float32 to the grid as torch.ao's fake quantizer rounds, clipped to "
    "narrower grids",
    "[int8]") {
  Generator gen(8);
  const Tensor x = randn({2, 3, 5, 7}, gen) * 3.0;
  const Int8Grid g = GENERATE(grid(0.037f, 50, 0, 127), grid(0.021f, 128, 0, 255),
                              grid(0.03f, 0, -127, 127), grid(0.5f, 0, -8, 7));
  INFO(g.str());
  quant::Int8Quantize q("test input", g);
  const std::vector<int> got = ints_of(q.forward(x));
  const std::vector<float> fq =
      ao::fake_quantize_per_tensor_affine(x, g.scale, g.zero_point, g.quant_min, g.quant_max)
          .to_vector<float>();
  REQUIRE(got.size() == fq.size());
  int clipped = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i] == static_cast<int>(std::nearbyint(fq[i] / g.scale)) + g.zero_point);
    clipped += got[i] == g.quant_min || got[i] == g.quant_max;
  }
  CHECK(clipped > 0);
  CHECK_THROWS_WITH(q.forward(x.to(DType::Float64)),
                    Catch::Contains("test input") && Catch::Contains("must be float32"));
}

TEST_CASE("int8 max_pool2d: the maximum grid value of each window, ceil_mode and padding",
          "[int8]") {
  const Int8Grid g = grid(0.1f, 0, -128, 127);
  const Activation x = random_activation(2, 3, 7, 7, g, 9);
  quant::Int8MaxPool2dSpec s;
  s.name = "test pool";
  s.kernel = {3, 3};
  s.stride = {2, 2};
  s.padding = {1, 1};
  s.ceil_mode = true;
  quant::Int8MaxPool2d pool(s);
  const Tensor y = pool.forward(x.t);
  REQUIRE(y.shape() == Shape{2, 3, 4, 4});
  const std::vector<int> got = ints_of(y);
  std::size_t i = 0;
  for (int b = 0; b < 6; ++b)
    for (int oy = 0; oy < 4; ++oy)
      for (int ox = 0; ox < 4; ++ox, ++i) {
        int m = -1000;
        for (int ky = 0; ky < 3; ++ky)
          for (int kx = 0; kx < 3; ++kx) {
            const int iy = oy * 2 - 1 + ky, ix = ox * 2 - 1 + kx;
            if (iy >= 0 && iy < 7 && ix >= 0 && ix < 7)
              m = std::max(m, x.nchw[(b * 7 + iy) * 7 + ix]);
          }
        CHECK(got[i] == m);
      }
}

TEST_CASE("int8 add: two grids with zero points, ReLU, onto a reduce_range grid or float32",
          "[int8]") {
  const Int8Grid ga = grid(0.05f, 20, 0, 127), gb = grid(0.02f, 128, 0, 255);
  const Activation a = random_activation(2, 3, 5, 4, ga, 11);
  const Activation b = random_activation(2, 3, 5, 4, gb, 12);
  quant::Int8AddSpec s;
  s.name = "test add";
  s.a = ga;
  s.b = gb;
  s.relu = true;
  SECTION("uint8 output") {
    s.output = grid(0.03f, 5, 0, 127);
    quant::Int8Add add(s);
    std::vector<Expected> want;
    for (std::size_t i = 0; i < a.nchw.size(); ++i)
      want.push_back(requantize(
          ((a.nchw[i] - 20) * double(0.05f) + (b.nchw[i] - 128) * double(0.02f)) / double(0.03f),
          *s.output, true));
    const std::vector<int> got = ints_of(add.add(a.t, b.t));
    compare(got, want);
    const std::set<int> distinct(got.begin(), got.end());
    CHECK(distinct.count(5) == 1);    // ReLU: the zero point
    CHECK(distinct.count(127) == 1);  // the grid's bound
    CHECK(distinct.size() > 30);
  }
  SECTION("float32 output") {
    quant::Int8Add add(s);
    const std::vector<float> got = add.add(a.t, b.t).contiguous().to_vector<float>();
    for (std::size_t i = 0; i < got.size(); ++i)
      CHECK(got[i] == Approx(std::max(0.0, (a.nchw[i] - 20) * double(0.05f) +
                                               (b.nchw[i] - 128) * double(0.02f)))
                          .margin(1e-5));
  }
  const Activation other = random_activation(2, 3, 5, 5, gb, 13);
  CHECK_THROWS_WITH(quant::Int8Add(s).add(a.t, other.t),
                    Catch::Contains("test add: inputs must be [N, C, H, W] of the same shape"));
  CHECK_THROWS_WITH(quant::Int8Add(s).forward(a.t), Catch::Contains("test add has two inputs"));
}

TEST_CASE("int8 layers: bad specs and inputs are errors naming the layer", "[int8]") {
  quant::Int8Conv2dSpec s;
  s.name = "layer '4' (QuantConv2d)";
  s.in_channels = 2;
  s.out_channels = 3;
  s.kernel = {3, 3};
  s.weight = random_weights(10, 1);
  s.weight_scale = {1, 1, 1};
  s.input = grid(0.1f, 0, 0, 255);
  CHECK_THROWS_WITH(quant::Int8Conv2d(s), Catch::Contains("layer '4' (QuantConv2d)") &&
                                              Catch::Contains("10 weights, expected 54"));
  s.weight = random_weights(54, 1);
  s.weight_scale = {1, 0, 1};
  CHECK_THROWS_WITH(quant::Int8Conv2d(s), Catch::Contains("weight scale of channel 1 is 0"));
  s.weight_scale = {1, 1, 1};
  quant::Int8Conv2d conv(s);
  CHECK_THROWS_WITH(conv.forward(zeros({1, 2, 5, 5}, TensorOptions().dtype(DType::Int8))),
                    Catch::Contains("layer '4' (QuantConv2d): input must be uint8"));
  CHECK_THROWS_WITH(conv.forward(zeros({1, 3, 5, 5}, TensorOptions().dtype(DType::UInt8))),
                    Catch::Contains("input must be [N, 2, H, W], got [1, 3, 5, 5]"));
  CHECK_THROWS_WITH(conv.forward(zeros({1, 2, 2, 2}, TensorOptions().dtype(DType::UInt8))),
                    Catch::Contains("smaller than the kernel"));

  // The direct kernel's limits.
  s.weight_scale = {1, 1, 1};
  s.output = grid(0.1f, 0, 0, 255);
  CHECK(quant::Int8DirectConv2d::supports(s));
  quant::Int8Conv2dSpec strided = s;
  strided.stride = {2, 2};
  CHECK_FALSE(quant::Int8DirectConv2d::supports(strided));
  CHECK_THROWS_WITH(quant::Int8DirectConv2d(strided, std::nullopt),
                    Catch::Contains("layer '4' (QuantConv2d)") && Catch::Contains("stride 1"));
  quant::Int8Conv2dSpec wide = s;
  wide.in_channels = 8;  // 8 * 3 * 3 = 72 inputs per output
  wide.weight = random_weights(3 * 72, 1);
  CHECK_FALSE(quant::Int8DirectConv2d::supports(wide));
  quant::Int8MaxPool2dSpec padded;
  padded.name = "layer '5' (MaxPool2d)";
  padded.padding = {1, 1};
  CHECK_THROWS_WITH(quant::Int8DirectConv2d(s, padded),
                    Catch::Contains("layer '5' (MaxPool2d)") && Catch::Contains("fused"));
  quant::Int8DirectConv2d direct(s, std::nullopt);
  CHECK_THROWS_WITH(direct.forward(zeros({1, 2, 5, 5}, TensorOptions().dtype(DType::Int8))),
                    Catch::Contains("layer '4' (QuantConv2d): input must be uint8"));
  CHECK_THROWS_WITH(direct.forward(zeros({1, 2, 2, 5}, TensorOptions().dtype(DType::UInt8))),
                    Catch::Contains("smaller than the kernel"));
  quant::Int8MaxPool2dSpec pool3;
  pool3.name = "layer '5' (MaxPool2d)";
  pool3.kernel = pool3.stride = {3, 3};
  CHECK_THROWS_WITH(quant::Int8DirectConv2d(s, pool3).forward(
                        zeros({1, 2, 4, 4}, TensorOptions().dtype(DType::UInt8))),
                    Catch::Contains("smaller than the fused pool"));
  quant::Int8DirectConv2dOptions from_float;
  from_float.quantize_input = true;
  CHECK_THROWS_WITH(quant::Int8DirectConv2d(s, std::nullopt, from_float)
                        .forward(zeros({1, 2, 5, 5}, TensorOptions().dtype(DType::UInt8))),
                    Catch::Contains("input must be float32"));

  quant::Int8LinearSpec l;
  l.name = "layer '9' (QuantLinear)";
  l.in_features = 4;
  l.out_features = 2;
  l.weight = random_weights(8, 1);
  l.weight_scale = {1, 1};
  l.input = grid(0.1f, 0, 0, 255);
  quant::Int8Linear linear(l);
  CHECK_THROWS_WITH(linear.forward(zeros({2, 5}, TensorOptions().dtype(DType::UInt8))),
                    Catch::Contains("layer '9' (QuantLinear): input must be [N, 4]"));
}
