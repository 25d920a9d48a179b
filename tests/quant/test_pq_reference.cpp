// qgrad's NVIDIA family against fixtures computed by pytorch_quantization 2.2.1's own Python code
// (tests/fixtures/gen_pq_reference.py, run on PyTorch 1.13): tensor_quant / fake_tensor_quant /
// legacy_fake_tensor_quant forward and backward (ties, signed zeros, NaN/Inf, tiny, subnormal and
// huge amax, narrow and wide range, unsigned, per-channel amax on several axes), scaled_e4m3 with
// and without amax, the learnable Clip (forward, dx, dmin, dmax) and QuantDescriptor.dict().
// Every float is compared bit for bit (any NaN matches any NaN). Also: the FP8 code functions
// against the generator's table of all 256 codes and its nearest-even encode cases, and
// modelopt_scaled_fp8 on worked examples.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/factory.h"
#include "core/json_parse.h"
#include "core/npy.h"
#include "quant/modules/clip.h"
#include "quant/nvidia/fp8_codes.h"
#include "quant/nvidia/quant_descriptor.h"
#include "quant/nvidia/tensor_quant.h"
#include "support/fixtures.h"

using namespace qgrad;
using namespace qgrad::nvidia;
using nlohmann::json;
using qgrad_test::check_bits_or_nan;

namespace {

const char* kDir = "pq_reference";

json read_fixture_json(const std::string& file) {
  return qgrad_test::read_fixture_json(kDir, file);
}

Tensor load(const json& c, const char* key) {
  return load_npy(qgrad_test::fixture_path(kDir, c.at(key).get<std::string>()));
}

std::vector<float> floats(const Tensor& t) {
  return t.contiguous().to_vector<float>();
}

void check_same(const Tensor& got, const json& c, const char* key, bool check_shape = true) {
  INFO(key);
  const Tensor want = load(c, key);
  if (check_shape) CHECK(got.shape() == want.shape());
  check_bits_or_nan(floats(got), floats(want));
}

const json& cases() {
  static const json j = read_fixture_json("cases.json");
  return j.at("cases");
}

}  // namespace

TEST_CASE("pq reference: integer quantization, bit for bit", "[quant][nvidia][pq_reference]") {
  int n = 0;
  for (const json& c : cases()) {
    const std::string op = c.at("op");
    if (op != "tensor_quant" && op != "fake_tensor_quant" && op != "legacy_fake_tensor_quant")
      continue;
    INFO("case " << c.at("name").get<std::string>());
    ++n;
    const int bits = c.at("num_bits");
    const bool uns = c.at("unsigned"), nr = c.at("narrow_range");
    const Tensor amax = load(c, "amax");
    if (op == "tensor_quant") {
      auto [q, scale] = tensor_quant(load(c, "x"), amax, bits, uns, nr);
      check_same(q, c, "out");
      check_same(scale, c, "scale");
      continue;
    }
    Tensor x = load(c, "x").set_requires_grad(true);
    Tensor out = op == "fake_tensor_quant" ? fake_tensor_quant(x, amax, bits, uns, nr)
                                           : legacy_fake_tensor_quant(x, amax, bits, uns, nr);
    check_same(out, c, "out");
    out.backward(load(c, "dy"));
    check_same(x.grad(), c, "dx");
  }
  CHECK(n >= 40);
}

TEST_CASE("pq reference: scaled_e4m3, bit for bit", "[quant][nvidia][pq_reference]") {
  int n = 0;
  for (const json& c : cases()) {
    if (c.at("op") != "scaled_e4m3") continue;
    INFO("case " << c.at("name").get<std::string>());
    ++n;
    Tensor x = load(c, "x").set_requires_grad(true);
    const Tensor amax = c.contains("amax") ? load(c, "amax") : Tensor();
    Tensor out = scaled_e4m3(x, amax);
    check_same(out, c, "out");
    out.backward(load(c, "dy"));
    check_same(x.grad(), c, "dx");
  }
  CHECK(n >= 9);
}

TEST_CASE("pq reference: learnable Clip, bit for bit", "[quant][nvidia][pq_reference]") {
  int n = 0;
  for (const json& c : cases()) {
    if (c.at("op") != "clip") continue;
    INFO("case " << c.at("name").get<std::string>());
    ++n;
    quant::Clip clip(c.at("min").get<double>(), c.at("max").get<double>());
    Tensor x = load(c, "x").set_requires_grad(true);
    Tensor out = clip.forward(x);
    check_same(out, c, "out");
    out.backward(load(c, "dy"));
    check_same(x.grad(), c, "dx");
    // The bound gradients: one value each (PyTorch 1.13 hands pq's 0-d parameters a grad of
    // shape (1,), qgrad a 0-d one; only the value is compared).
    check_same(clip.clip_value_min().grad(), c, "dmin", false);
    check_same(clip.clip_value_max().grad(), c, "dmax", false);
  }
  CHECK(n >= 4);
}

TEST_CASE("pq reference: QuantDescriptor to_dict matches dict()", "[quant][nvidia][pq_reference]") {
  const json descs = read_fixture_json("descriptors.json");
  REQUIRE(descs.size() >= 10);
  for (const json& d : descs) {
    json kwargs = d.at("kwargs");
    INFO("kwargs " << kwargs.dump());
    const json& want = d.at("dict");
    const QuantDescriptor from_kwargs = QuantDescriptor::from_dict(kwargs);
    CHECK(from_kwargs.to_dict() == want);
    // pq's dict() read back gives the same dict, and the exact JSON round trip still holds.
    CHECK(QuantDescriptor::from_dict(want).to_dict() == want);
    CHECK(QuantDescriptor::from_json(from_kwargs.to_json()) == from_kwargs);
    if (kwargs.contains("axis"))
      CHECK(from_kwargs.axis().kind ==
            (d.at("axis_is_tuple").get<bool>() ? QuantAxis::Kind::Tuple : QuantAxis::Kind::Int));
  }
  // amax as float32 values, held as doubles: 0.1 -> 0.10000000149011612.
  const json dict = QuantDescriptor(QuantDescriptorOptions().amax(0.1)).to_dict();
  CHECK(dict.at("amax").get<double>() == 0.10000000149011612);
  CHECK(dict.at("name").is_null());
  CHECK_FALSE(dict.contains("narrow_range"));
  CHECK_FALSE(dict.contains("calib_method"));
  CHECK_THROWS_AS(QuantDescriptor::from_dict(json::array()), ValueError);
}

TEST_CASE("FP8 codes: decode of all 256 codes against the bit-layout table",
          "[quant][nvidia][fp8]") {
  for (const char* name : {"e4m3", "e5m2"}) {
    INFO(name);
    const FloatFormat f = std::string(name) == "e4m3" ? kE4M3 : kE5M2;
    std::vector<std::uint8_t> all(256);
    for (int i = 0; i < 256; ++i) all[i] = static_cast<std::uint8_t>(i);
    const Tensor codes = from_vector<std::uint8_t>(all, {256});
    const Tensor want = qgrad_test::load_fixture(kDir, std::string("fp8_") + name + "_decode");
    check_bits_or_nan(floats(fp8_decode(codes, f)), floats(want));
    // Every finite code survives decode -> encode; NaN codes give 0x7F, E5M2's +-Inf saturate.
    const std::vector<std::uint8_t> back =
        fp8_encode(fp8_decode(codes, f), f).to_vector<std::uint8_t>();
    for (int i = 0; i < 256; ++i) {
      const float v = floats(want)[i];
      INFO("code " << i);
      const int expect = std::isnan(v) ? 0x7F : std::isinf(v) ? (i & 0x80) | 0x7B : i;
      CHECK(static_cast<int>(back[i]) == expect);
    }
  }
}

TEST_CASE("FP8 codes: encode (ties to even, saturation, NaN, signed zero)",
          "[quant][nvidia][fp8]") {
  for (const char* name : {"e4m3", "e5m2"}) {
    INFO(name);
    const FloatFormat f = std::string(name) == "e4m3" ? kE4M3 : kE5M2;
    const Tensor x = qgrad_test::load_fixture(kDir, std::string("fp8_") + name + "_encode_x");
    const std::vector<std::uint8_t> want =
        qgrad_test::load_fixture(kDir, std::string("fp8_") + name + "_encode_codes")
            .to_vector<std::uint8_t>();
    const std::vector<std::uint8_t> got = fp8_encode(x, f).to_vector<std::uint8_t>();
    REQUIRE(got.size() == want.size());
    const std::vector<float> xv = floats(x);
    for (std::size_t i = 0; i < got.size(); ++i) {
      INFO("x = " << xv[i]);
      CHECK(static_cast<int>(got[i]) == static_cast<int>(want[i]));
    }
    // The cast of scaled_e4m3 without amax is decode(encode(x)) (E4M3), apart from the
    // |x| < 2^-24 mask.
    if (f == kE4M3) {
      std::vector<float> rt = floats(fp8_decode(fp8_encode(x, f), f));
      for (std::size_t i = 0; i < rt.size(); ++i)
        if (std::fabs(xv[i]) < 1.0f / (1 << 24)) rt[i] = 0.0f;
      check_bits_or_nan(floats(scaled_e4m3(x, Tensor())), rt);
    }
  }
  // Worked values.
  const Tensor x = from_vector<float>(
      {448.0f, 464.0f, 1e9f, -INFINITY, NAN, -0.0f, 0.0009765625f, 0.001953125f, 17.0f, 19.0f},
      {10});
  const std::vector<std::uint8_t> e4 = fp8_encode(x, kE4M3).to_vector<std::uint8_t>();
  const std::vector<int> want4{0x7E, 0x7E, 0x7E, 0xFE, 0x7F, 0x80, 0x00, 0x01, 0x58, 0x5A};
  for (std::size_t i = 0; i < want4.size(); ++i) CHECK(static_cast<int>(e4[i]) == want4[i]);
  const std::vector<std::uint8_t> e5 = fp8_encode(x, kE5M2).to_vector<std::uint8_t>();
  CHECK(static_cast<int>(e5[2]) == 0x7B);
  CHECK(static_cast<int>(e5[3]) == 0xFB);
  CHECK(static_cast<int>(e5[4]) == 0x7F);
  CHECK(static_cast<int>(e5[5]) == 0x80);
  CHECK_THROWS_AS(fp8_encode(x, kE2M1), ValueError);
  CHECK_THROWS_AS(fp8_encode(x.to(kFloat64)), DTypeError);
  CHECK_THROWS_AS(fp8_decode(x), DTypeError);
}

TEST_CASE("modelopt_scaled_fp8: reciprocal multiply, no mask, safe amax", "[quant][nvidia][fp8]") {
  const std::vector<float> xv{-0.0f, 1e-30f, 1.0f, -1.0f, 0.3f, 3.0f, 100.0f, NAN};
  const Tensor x = from_vector<float>(xv, {8});
  const float amax = 2.54f;
  const float s = (1.0f / amax) * 448.0f, inv = 1.0f / s;
  const std::vector<float> got =
      modelopt_scaled_fp8(x, from_vector<float>({amax}, {})).to_vector<float>();
  const Tensor ref_codes = fp8_decode(fp8_encode(from_vector<float>(
      [&] {
        std::vector<float> v;
        for (float e : xv) v.push_back(e * s);
        return v;
      }(),
      {8})));
  std::vector<float> want = floats(ref_codes);
  for (float& w : want) w = w * inv;
  check_bits_or_nan(got, want);
  CHECK(std::signbit(got[0]));  // no small-value mask: -0.0 stays -0.0
  // amax <= 2^-24 is replaced by 1 (scale 448), unlike pq's scaled_e4m3.
  const std::vector<float> tiny =
      modelopt_scaled_fp8(x, from_vector<float>({0.0f}, {})).to_vector<float>();
  CHECK(tiny[2] == 1.0f);
}
