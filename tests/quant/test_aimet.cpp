// Tests of AIMET v2 affine quantization (quant/aimet): the documentation's examples reproduced
// exactly, the spec's scale/offset rule, QuantizedTensor / DequantizedTensor round trips and
// quantized_repr dtypes, compute_encodings statistics (symmetric delta rule, per-channel
// encodings), range-learning gradients against finite differences of the STE surrogate,
// per-channel (O,1,1,1) encodings, properties, JSON export and bad arguments.
#include <catch2/catch.hpp>

#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/factory.h"
#include "quant/aimet/affine_quantize.h"
#include "quant/aimet/affine_quantizer.h"
#include "quant/aimet/encodings_json.h"

using namespace qgrad;
using namespace qgrad::aimet;

namespace {
Tensor f32(std::vector<float> v, Shape s) {
  return from_vector<float>(v, s);
}
}  // namespace

TEST_CASE("aimet: documentation example, symmetric Quantize", "[quant][aimet]") {
  AffineQuantizer q({}, 8, /*symmetric=*/true);
  q.set_range(-128 * 0.1, 127 * 0.1);
  const Tensor x = f32({2.57f, -2.312f, 0.153f, 0.205f}, {2, 2});
  const QuantizedTensor xq = q.quantize(x);
  CHECK(xq.data().to_vector<float>() == std::vector<float>{26, -23, 2, 2});
  const Tensor repr = xq.quantized_repr();
  CHECK(repr.dtype() == kInt8);
  CHECK(repr.to_vector<std::int8_t>() == std::vector<std::int8_t>{26, -23, 2, 2});
  const DequantizedTensor xdq = xq.dequantize();
  const std::vector<float> d = xdq.data().to_vector<float>();
  const float s = q.get_scale().item<float>();
  CHECK(d == std::vector<float>{26 * s, -23 * s, 2 * s, 2 * s});
  CHECK(d[0] == Approx(2.6f));
  CHECK(d[1] == Approx(-2.3f));
  CHECK(xdq.encoding().scale().item<float>() == xq.encoding().scale().item<float>());
  CHECK(xq.encoding().offset().item<float>() == 0.0f);
}

TEST_CASE("aimet: documentation example, asymmetric QuantizeDequantize", "[quant][aimet]") {
  AffineQuantizer q({}, 8, /*symmetric=*/false);
  q.set_range(-10, 41);
  CHECK(q.get_scale().item<float>() == 51.0f / 255.0f);
  CHECK(q.get_offset().item<float>() == -50.0f);  // rne(min / scale) - qmin
  const Tensor x = f32({0.39f, 51.0f, 3.521f, 9.41f}, {2, 2});
  const DequantizedTensor xqdq = q.quantize_dequantize(x);
  const std::vector<float> d = xqdq.data().to_vector<float>();
  const float s = 0.2f;
  CHECK(d == std::vector<float>{2 * s, 205 * s, 18 * s, 47 * s});
  CHECK(d[0] == 0.4f);
  CHECK(d[1] == 41.0f);
  CHECK(d[2] == Approx(3.6f));
  CHECK(d[3] == Approx(9.4f));
  const QuantizedTensor back = xqdq.quantize();
  CHECK(back.data().to_vector<float>() == std::vector<float>{52, 255, 68, 97});
  const Tensor repr = xqdq.quantized_repr();
  CHECK(repr.dtype() == kUInt8);
  CHECK(repr.to_vector<std::uint8_t>() == std::vector<std::uint8_t>{52, 255, 68, 97});
  // Encoding range: (offset + qmin) * scale, (offset + qmax) * scale.
  CHECK(back.encoding().min().item<float>() == -50 * s);
  CHECK(back.encoding().max().item<float>() == 205 * s);
}

TEST_CASE("aimet: quantize formula with a division and half-to-even rounding", "[quant][aimet]") {
  // x / 0.1f rounds differently from x * (1 / 0.1f) for 1.55f: AIMET divides.
  const Tensor s = full({}, 0.1), o = zeros({});
  CHECK(quantize(f32({1.55f, 2.35f, 0.25f, -0.25f}, {4}), full({}, 0.5), o, -128, 127)
            .to_vector<float>() == std::vector<float>{3, 5, 0, -0});
  CHECK(quantize(f32({1.55f}, {1}), s, o, -128, 127).item<float>() == 15.0f);
  // offset shifts the grid: q = clamp(rne(x / s) - o).
  CHECK(quantize(f32({1.0f, -30.0f, 30.0f}, {3}), full({}, 1.0), full({}, -5.0), 0, 15)
            .to_vector<float>() == std::vector<float>{6, 0, 15});
  CHECK(dequantize(f32({6, 0, 15}, {3}), full({}, 1.0), full({}, -5.0)).to_vector<float>() ==
        std::vector<float>{1, -5, 10});
  Tensor nan = quantize_dequantize(f32({std::nanf("")}, {1}), s, o, -128, 127);
  CHECK(std::isnan(nan.item<float>()));
}

TEST_CASE("aimet: per-channel (O,1,1,1) encodings on a conv weight", "[quant][aimet]") {
  Generator gen(21);
  Tensor w = randn({4, 3, 2, 2}, gen);
  const std::vector<float> sc{0.01f, 0.02f, 0.05f, 0.1f}, of{-3, 0, 5, -128};
  Tensor s = f32(sc, {4, 1, 1, 1}), o = f32(of, {4, 1, 1, 1});
  Tensor y = quantize_dequantize(w, s, o, 0, 255);
  const std::vector<float> wv = w.to_vector<float>(), yv = y.to_vector<float>();
  for (std::size_t i = 0; i < wv.size(); ++i) {
    const std::size_t c = i / 12;
    const float q = std::min(std::max(std::nearbyint(wv[i] / sc[c]) - of[c], 0.0f), 255.0f);
    REQUIRE(yv[i] == (q + of[c]) * sc[c]);
  }
  // The same through an AffineQuantizer with a per-channel shape.
  AffineQuantizer pq({4, 1, 1, 1}, 8, true);
  {
    auto scope = pq.compute_encodings();
    pq.quantize_dequantize(w);
  }
  REQUIRE(pq.is_initialized());
  const QuantizedTensor wq = pq.quantize(w);
  const std::vector<float> qv = wq.data().to_vector<float>();
  for (int c = 0; c < 4; ++c) {
    float lo = 1e9f, hi = -1e9f;
    for (int k = 0; k < 12; ++k) {
      lo = std::min(lo, qv[static_cast<std::size_t>(c * 12 + k)]);
      hi = std::max(hi, qv[static_cast<std::size_t>(c * 12 + k)]);
    }
    CHECK((lo == -128.0f || hi == 127.0f));  // each channel's extreme reaches the grid edge
  }
  CHECK(wq.encoding().per_channel());
}

TEST_CASE("aimet: compute_encodings statistics and the symmetric delta rule", "[quant][aimet]") {
  Generator gen(5);
  Tensor x = randn({2, 4}, gen);
  AffineQuantizer q({2, 1}, 8, true);
  QuantizedTensor during = [&] {
    auto scope = q.compute_encodings();
    return q.quantize(x);
  }();
  const std::vector<float> xv = x.to_vector<float>(), mins = q.min().to_vector<float>(),
                           maxs = q.max().to_vector<float>();
  for (int r = 0; r < 2; ++r) {
    float lo = 0, hi = 0;
    for (int c = 0; c < 4; ++c) {
      lo = std::min(lo, xv[static_cast<std::size_t>(r * 4 + c)]);
      hi = std::max(hi, xv[static_cast<std::size_t>(r * 4 + c)]);
    }
    const float delta = std::max(hi / 127.0f, -lo / 128.0f);
    CHECK(mins[static_cast<std::size_t>(r)] == -128 * delta);
    CHECK(maxs[static_cast<std::size_t>(r)] == 127 * delta);
  }
  // While open, the batch's own encoding was used: the same as the final one here.
  CHECK(during.data().to_vector<float>() == q.quantize(x).data().to_vector<float>());

  // Asymmetric: min clamped to <= 0, max to >= 0; several batches accumulate.
  AffineQuantizer a({}, 8, false);
  {
    auto scope = a.compute_encodings();
    a.quantize_dequantize(f32({0.5f, 2.0f}, {2}));
    a.quantize_dequantize(f32({1.0f, 3.0f}, {2}));
  }
  CHECK(a.min().item<float>() == 0.0f);
  CHECK(a.max().item<float>() == 3.0f);

  // Tiny ranges are widened by eps steps.
  auto [mn, mx] =
      MinMaxEncodingAnalyzer::compute_encodings_from_stats({zeros({}), zeros({})}, 255, false);
  CHECK(mn.item<float>() == 0.0f);
  CHECK(mx.item<float>() == 255 * 1.1920928955078125e-07f);
  auto [smn, smx] =
      MinMaxEncodingAnalyzer::compute_encodings_from_stats({zeros({}), zeros({})}, 255, true);
  const float eps = 1.1920928955078125e-07f;
  const float delta = std::max((127 * eps) / 127, -(-(128 * eps)) / 128);
  CHECK(smn.item<float>() == -128 * delta);
  CHECK(smx.item<float>() == 127 * delta);

  // No statistics: the range is kept; an exception inside the scope keeps it too.
  AffineQuantizer b({}, 8, false);
  b.set_range(-1, 1);
  { auto scope = b.compute_encodings(); }
  CHECK(b.max().item<float>() == 1.0f);
  try {
    auto scope = b.compute_encodings();
    b.quantize_dequantize(f32({5.0f}, {1}));
    throw std::runtime_error("user error");
  } catch (const std::runtime_error&) {
  }
  CHECK(b.max().item<float>() == 1.0f);
  CHECK_FALSE(b.computing_encodings());
}

TEST_CASE("aimet: DequantizedTensor.quantize is exact and idempotent", "[quant][aimet]") {
  Generator gen(8);
  Tensor x = uniform({1000}, -7, 13, gen);
  for (bool sym : {true, false}) {
    for (int bw : {4, 8, 16}) {
      AffineQuantizer q({}, bw, sym);
      q.set_range(-6.3, 11.9);
      const DequantizedTensor d = q.quantize_dequantize(x);
      const QuantizedTensor qt = d.quantize();
      const std::vector<float> qv = qt.data().to_vector<float>();
      for (float v : qv) {
        REQUIRE(v == std::nearbyint(v));
        REQUIRE(v >= static_cast<float>(q.qmin()));
        REQUIRE(v <= static_cast<float>(q.qmax()));
      }
      REQUIRE(qt.dequantize().data().to_vector<float>() == d.data().to_vector<float>());
      REQUIRE(qt.dequantize().quantize().data().to_vector<float>() == qv);
      const Tensor repr = qt.quantized_repr();
      const DType want = bw <= 8    ? (sym ? kInt8 : kUInt8)
                         : bw < 16  ? kInt16
                         : bw == 16 ? (sym ? kInt16 : kInt32)
                                    : kInt32;
      REQUIRE(repr.dtype() == want);
      REQUIRE(repr.to(kFloat32).to_vector<float>() == qv);
    }
  }
}

TEST_CASE("aimet: quantized_repr dtype follows AIMET for every bitwidth", "[quant][aimet]") {
  // AIMET's AffineEncoding.dtype: the first of uint8 / int8 / int16 that holds [qmin, qmax], else
  // int32 (torch has no uint16): unsigned 9..15-bit grids are int16, 16-bit ones int32.
  for (int bw = 1; bw <= 32; ++bw) {
    INFO("bitwidth " << bw);
    const AffineEncoding sym(full({}, 1.0), zeros({}), bw, true);
    const AffineEncoding asym(full({}, 1.0), zeros({}), bw, false);
    CHECK(sym.dtype() == (bw <= 8 ? kInt8 : bw <= 16 ? kInt16 : kInt32));
    CHECK(asym.dtype() == (bw <= 8 ? kUInt8 : bw < 16 ? kInt16 : kInt32));
  }
  // The grid edges survive the conversion: 16-bit signed into int16, 16-bit unsigned into int32.
  const Tensor q16 = from_vector<double>({-32768, -1, 0, 32767}, {2, 2});
  const QuantizedTensor s16(q16,
                            AffineEncoding(full({}, 0.5, TensorOptions().dtype(kFloat64)),
                                           zeros({}, TensorOptions().dtype(kFloat64)), 16, true));
  const Tensor r16 = s16.quantized_repr();
  REQUIRE(r16.dtype() == kInt16);
  REQUIRE(r16.shape() == Shape{2, 2});
  CHECK(r16.to_vector<std::int16_t>() == std::vector<std::int16_t>{-32768, -1, 0, 32767});
  const QuantizedTensor u16(from_vector<float>({0, 65535, 40000}),
                            AffineEncoding(full({}, 1.0), zeros({}), 16, false));
  const Tensor ru16 = u16.quantized_repr();
  REQUIRE(ru16.dtype() == kInt32);
  CHECK(ru16.to_vector<std::int32_t>() == std::vector<std::int32_t>{0, 65535, 40000});
  // Through a quantizer: a 12-bit symmetric encoding gives int16 values equal to the data.
  Generator gen(5);
  AffineQuantizer q12({}, 12, true);
  q12.set_range(-4.0, 4.0);
  const QuantizedTensor xq = q12.quantize(uniform({3, 7}, -5, 5, gen));
  const Tensor r12 = xq.quantized_repr();
  REQUIRE(r12.dtype() == kInt16);
  CHECK(r12.to_vector<double>() == xq.data().to_vector<double>());
  for (std::int16_t v : r12.to_vector<std::int16_t>()) CHECK((v >= -2048 && v <= 2047));
  // Unsigned 32-bit grid: values up to 2^31 - 1 fit AIMET's int32, larger ones are an error.
  const AffineEncoding u32(full({}, 1.0, TensorOptions().dtype(kFloat64)),
                           zeros({}, TensorOptions().dtype(kFloat64)), 32, false);
  const Tensor ok = QuantizedTensor(from_vector<double>({0, 2147483647.0}), u32).quantized_repr();
  CHECK(ok.dtype() == kInt32);
  CHECK(ok.to_vector<std::int32_t>() == std::vector<std::int32_t>{0, 2147483647});
  REQUIRE_THROWS_AS(QuantizedTensor(from_vector<double>({2147483648.0}), u32).quantized_repr(),
                    ValueError);
  REQUIRE_THROWS_WITH(QuantizedTensor(from_vector<double>({1, 4294967295.0}), u32).quantized_repr(),
                      Catch::Contains("quantized_repr") && Catch::Contains("int32"));
}

TEST_CASE("aimet: 32-bit grids run in double for float32 inputs", "[quant][aimet]") {
  const Tensor x = f32({0.123456f, -3.5f, 1e-4f}, {3});
  const double s = 1e-6;
  Tensor y = quantize_dequantize(x, full({}, s), zeros({}), -(std::int64_t{1} << 31),
                                 (std::int64_t{1} << 31) - 1);
  const std::vector<float> xv = x.to_vector<float>(), yv = y.to_vector<float>();
  const double sd = static_cast<float>(s);
  for (std::size_t i = 0; i < xv.size(); ++i)
    CHECK(yv[i] == static_cast<float>(std::nearbyint(xv[i] / sd) * sd));
  // quantize() would need integers float32 cannot hold.
  REQUIRE_THROWS_AS(
      quantize(x, full({}, s), zeros({}), -(std::int64_t{1} << 31), (std::int64_t{1} << 31) - 1),
      ValueError);
}

// The gradients AIMET defines are the exact derivatives of a straight-through surrogate: with
// the rounding residuals d_x = rne(x/s) - x/s and d_o = rne(min/s) - min/s frozen,
//   s = (max - min) / N, o = min / s + d_o, y = s * (clamp(x/s + d_x - o, qmin, qmax) + o).
// Finite differences of it (float64, away from ties and range edges) must match the analytic
// dx, dmin, dmax.
TEST_CASE("aimet: range-learning gradients equal finite differences of the STE surrogate",
          "[quant][aimet]") {
  Generator gen(13);
  const int bw = 4;
  const double N = 15;
  for (bool sym : {false, true}) {
    const AffineGrid g = affine_grid(bw, sym);
    const double min0 = sym ? -1.6 : -0.93, max0 = sym ? 1.5 : 2.71;
    const double s0 = (max0 - min0) / N;
    const double o_resid = sym ? 0 : std::nearbyint(min0 / s0) - min0 / s0;
    std::vector<double> xs, ws;
    for (double v :
         uniform({400}, -2.5, 3.5, gen, TensorOptions().dtype(kFloat64)).to_vector<double>()) {
      const double t = v / s0;
      const double o = sym ? 0 : std::nearbyint(min0 / s0) - g.qmin;
      if (std::fabs(t - std::floor(t) - 0.5) < 0.05) continue;
      if (std::fabs(std::nearbyint(t) - o - g.qmin) < 1 ||
          std::fabs(std::nearbyint(t) - o - g.qmax) < 1) {
        if (std::fabs(t - o - g.qmin) < 0.7 || std::fabs(t - o - g.qmax) < 0.7) continue;
      }
      xs.push_back(v);
      ws.push_back(std::sin(v * 3.0));
    }
    const auto n = static_cast<std::int64_t>(xs.size());
    const TensorOptions f64 = TensorOptions().dtype(kFloat64);
    Tensor x = from_vector<double>(xs, {n}).set_requires_grad(true);
    Tensor mn = full({}, min0, f64).set_requires_grad(true);
    Tensor mx = full({}, max0, f64).set_requires_grad(true);
    Tensor s = encoding_scale(mn, mx, bw);
    Tensor o = encoding_offset(mn, s, bw, sym);
    Tensor y = quantize_dequantize(x, s, o, g.qmin, g.qmax);
    y.backward(from_vector<double>(ws, {n}));

    std::vector<double> dres(xs.size());
    for (std::size_t i = 0; i < xs.size(); ++i) dres[i] = std::nearbyint(xs[i] / s0) - xs[i] / s0;
    auto loss = [&](double lo, double hi, const std::vector<double>& xv) {
      const double sc = (hi - lo) / N;
      const double off = sym ? 0.0 : lo / sc + o_resid - g.qmin;
      double total = 0;
      for (std::size_t i = 0; i < xv.size(); ++i) {
        const double q =
            std::min(std::max(xv[i] / sc + dres[i] - off, double(g.qmin)), double(g.qmax));
        total += ws[i] * sc * (q + off);
      }
      return total;
    };
    const double h = 1e-7;
    const double fd_min = (loss(min0 + h, max0, xs) - loss(min0 - h, max0, xs)) / (2 * h);
    const double fd_max = (loss(min0, max0 + h, xs) - loss(min0, max0 - h, xs)) / (2 * h);
    INFO("symmetric " << sym << " points " << n);
    CHECK(mn.grad().item<double>() == Approx(fd_min).epsilon(1e-5).margin(1e-6));
    CHECK(mx.grad().item<double>() == Approx(fd_max).epsilon(1e-5).margin(1e-6));
    const std::vector<double> dx = x.grad().to_vector<double>();
    for (std::size_t i = 0; i < xs.size(); ++i) {
      std::vector<double> xp = xs, xm = xs;
      xp[i] += h;
      xm[i] -= h;
      REQUIRE(dx[i] ==
              Approx((loss(min0, max0, xp) - loss(min0, max0, xm)) / (2 * h)).margin(1e-5));
    }
  }
}

TEST_CASE("aimet: quantize and dequantize gradients follow AIMET's formulas", "[quant][aimet]") {
  const TensorOptions f64 = TensorOptions().dtype(kFloat64);
  Tensor x = from_vector<double>({0.33, 5.0, -1.2}, {3}).set_requires_grad(true);
  Tensor s = full({}, 0.25, f64).set_requires_grad(true);
  Tensor o = full({}, -2.0, f64).set_requires_grad(true);
  Tensor q = quantize(x, s, o, 0, 15);  // rne(x/s) - o = [3, 22->15 (clamped), -3->0 (clamped)]
  CHECK(q.to_vector<double>() == std::vector<double>{3, 15, 0});
  q.backward(ones({3}, f64));
  CHECK(x.grad().to_vector<double>() == std::vector<double>{4, 0, 0});
  CHECK(s.grad().item<double>() == Approx(-(1 / 0.25) * (0.33 / 0.25)));
  CHECK(o.grad().item<double>() == -1.0);

  Tensor qi = from_vector<double>({3, 7}, {2}).set_requires_grad(true);
  Tensor s2 = full({}, 0.5, f64).set_requires_grad(true);
  Tensor o2 = full({}, 1.0, f64).set_requires_grad(true);
  Tensor d = dequantize(qi, s2, o2);
  CHECK(d.to_vector<double>() == std::vector<double>{2, 4});
  d.backward(ones({2}, f64));
  CHECK(qi.grad().to_vector<double>() == std::vector<double>{0.5, 0.5});
  CHECK(s2.grad().item<double>() == (3 + 1) + (7 + 1));
  CHECK(o2.grad().item<double>() == 1.0);
}

TEST_CASE("aimet: encodings JSON export in the 0.6.1 and 1.0.0 layouts", "[quant][aimet]") {
  AffineQuantizer act({}, 8, false);
  act.set_range(-10, 41);
  AffineQuantizer w({2, 1}, 8, true);
  w.set_range(f32({-1.28f, -0.64f}, {2, 1}), f32({1.27f, 0.635f}, {2, 1}));
  const std::vector<NamedEncoding> acts{{"conv1.output", act.get_encoding()}};
  const std::vector<NamedEncoding> params{{"conv1.weight", w.get_encoding()}};

  const nlohmann::json v1 = encodings_to_json(acts, params);
  CHECK(v1["version"] == "1.0.0");
  const nlohmann::json& a = v1["activation_encodings"][0];
  CHECK(a["name"] == "conv1.output");
  CHECK(a["enc_type"] == "PER_TENSOR");
  CHECK(a["dtype"] == "INT");
  CHECK(a["bw"] == 8);
  CHECK(a["is_sym"] == false);
  CHECK(a["offset"][0] == -50);
  CHECK(a["scale"][0].get<double>() == static_cast<double>(0.2f));
  const nlohmann::json& p = v1["param_encodings"][0];
  CHECK(p["enc_type"] == "PER_CHANNEL");
  CHECK(p["is_sym"] == true);
  CHECK(p["scale"].size() == 2);
  CHECK(p["offset"] == nlohmann::json::array({-128, -128}));

  const nlohmann::json v0 = encodings_to_json(acts, params, EncodingFileVersion::V0_6_1);
  CHECK(v0["version"] == "0.6.1");
  const nlohmann::json& e = v0["activation_encodings"]["conv1.output"][0];
  CHECK(e["bitwidth"] == 8);
  CHECK(e["dtype"] == "int");
  CHECK(e["is_symmetric"] == "False");
  CHECK(e["offset"] == -50);
  CHECK(e["min"].get<double>() == static_cast<double>(-50 * 0.2f));
  CHECK(e["max"].get<double>() == static_cast<double>(205 * 0.2f));
  CHECK(v0["param_encodings"]["conv1.weight"].size() == 2);
  CHECK(v0["param_encodings"]["conv1.weight"][1]["is_symmetric"] == "True");
}

TEST_CASE("aimet: bad arguments", "[quant][aimet]") {
  using Catch::Contains;
  const Tensor x = ones({2, 3});
  REQUIRE_THROWS_WITH(quantize_dequantize(x, full({}, 0.0), zeros({}), 0, 255),
                      Contains("aimet.quantize_dequantize") && Contains("scale"));
  REQUIRE_THROWS_AS(quantize(x, full({}, -1.0), zeros({}), 0, 255), ValueError);
  REQUIRE_THROWS_AS(quantize(x, full({2}, 0.1), zeros({2}), 0, 255), ShapeError);
  REQUIRE_THROWS_AS(quantize(x, full({4, 2, 3}, 0.1), zeros({}), 0, 255), ShapeError);
  REQUIRE_THROWS_AS(quantize(x, full({}, 0.1), zeros({}), 5, 4), ValueError);
  REQUIRE_THROWS_AS(quantize(x, full({}, 0.1, TensorOptions().dtype(kFloat64)), zeros({}), 0, 255),
                    DTypeError);
  REQUIRE_THROWS_AS(quantize(x, full({}, 0.1), full({}, std::nan("")), 0, 255), ValueError);
  REQUIRE_THROWS_AS(affine_grid(0, true), ValueError);
  REQUIRE_THROWS_AS(affine_grid(33, false), ValueError);
  AffineQuantizer q({}, 8, false);
  REQUIRE_THROWS_WITH(q.quantize(x), Contains("not initialized"));
  q.set_range(1.0, 1.0);  // max == min: zero scale
  REQUIRE_THROWS_AS(q.quantize_dequantize(x), ValueError);
  AffineQuantizer pc({3, 1}, 8, true);
  REQUIRE_THROWS_AS(
      [&] {
        auto s = pc.compute_encodings();
        pc.quantize(x);
      }(),
      ShapeError);
  const QuantizedTensor bad(f32({0.5f}, {1}), AffineEncoding(full({}, 1.0), zeros({}), 8, false));
  REQUIRE_THROWS_AS(bad.quantized_repr(), ValueError);
}
