// qgrad's AIMET v2 family against fixtures computed by AIMET's own Python code
// (tests/fixtures/gen_aimet_reference.py: quic/aimet's aimet_torch/v2/quantization run on PyTorch
// 1.13): affine quantize / dequantize / quantize_dequantize forward and backward (dx, dscale,
// doffset) per tensor, per channel on several axes and on block layouts (AIMET's block_size,
// reproduced here by AIMET's own reshape), signed and unsigned grids of 2 to 32 bits, ties, signed
// zeros, NaN/Inf; MinMaxEncodingAnalyzer statistics and encodings over several batches (one all
// zero); the Quantize / QuantizeDequantize modules (set_range, scale, offset, encoding range,
// forward, range-learning dmin/dmax, quantized_repr dtype) and their compute_encodings scope.
// Every value is compared bit for bit (any NaN matches any NaN) except the scale / offset / min /
// max gradients that are sums over broadcast elements: qgrad sums in double, PyTorch in float32 in
// its own order, so those are compared to a relative tolerance (kSumRtol, see
// docs/quantization.md).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/factory.h"
#include "core/json_parse.h"
#include "core/npy.h"
#include "quant/aimet/affine_quantize.h"
#include "quant/aimet/affine_quantizer.h"
#include "quant/aimet/encodings_json.h"
#include "quant/aimet/minmax_encoding_analyzer.h"
#include "support/fixtures.h"

using namespace qgrad;
using namespace qgrad::aimet;
using nlohmann::json;
using qgrad_test::check_bits_or_nan;

namespace {

const char* kDir = "aimet_reference";

// Sums over broadcast elements (scale / offset / min / max gradients): qgrad sums in double.
// Measured largest difference against PyTorch's float32 sums: see docs/quantization.md.
constexpr double kSumRtol = 2e-5;

const json& all_cases() {
  static const json j = qgrad_test::read_fixture_json(kDir, "cases.json");
  return j.at("cases");
}

const std::vector<float>& blob() {
  static const std::vector<float> b =
      load_npy(qgrad_test::fixture_path(kDir, "data.npy")).to_vector<float>();
  return b;
}

Tensor load(const json& ref) {
  const auto at = ref.at("at").get<std::size_t>();
  const Shape shape = ref.at("shape").get<Shape>();
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  REQUIRE(at + n <= blob().size());
  return from_vector<float>(
      std::vector<float>(blob().begin() + static_cast<std::ptrdiff_t>(at),
                         blob().begin() + static_cast<std::ptrdiff_t>(at + n)),
      shape);
}

Tensor load(const json& c, const char* key) {
  return load(c.at(key));
}

std::vector<float> floats(const Tensor& t) {
  return t.contiguous().to_vector<float>();
}

void check_same(const Tensor& got, const json& c, const char* key) {
  INFO(key);
  const Tensor want = load(c, key);
  CHECK(got.shape() == want.shape());
  check_bits_or_nan(floats(got), floats(want));
}

// Largest relative difference seen in the summed gradients (printed once at the end).
double& worst_sum_rel() {
  static double w = 0;
  return w;
}

void check_sum(const Tensor& got, const json& c, const char* key) {
  INFO(key);
  const Tensor want = load(c, key);
  CHECK(got.shape() == want.shape());
  const std::vector<float> g = floats(got), w = floats(want);
  REQUIRE(g.size() == w.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    INFO("index " << i << " got " << g[i] << " expected " << w[i]);
    if (std::isnan(w[i]) || std::isinf(w[i])) {
      CHECK(qgrad_test::same_bits_or_nan(g[i], w[i]));
      continue;
    }
    const double d = std::abs(static_cast<double>(g[i]) - w[i]);
    const double rel = d / std::max(1.0, std::abs(static_cast<double>(w[i])));
    worst_sum_rel() = std::max(worst_sum_rel(), rel);
    CHECK(rel <= kSumRtol);
  }
}

// AIMET's reshape_tensor_for_blocks / get_encoding_shape_with_blocks: x [.., D_i, ..] becomes
// [.., S_i, D_i / S_i, ..] and the encoding [.., S_i, 1, ..], so that plain broadcasting applies.
struct BlockShapes {
  Shape x, enc;
};
BlockShapes block_shapes(const Shape& x, const Shape& enc) {
  BlockShapes b;
  const std::size_t lead = x.size() - enc.size();
  for (std::size_t i = 0; i < lead; ++i) b.x.push_back(x[i]);
  for (std::size_t i = 0; i < enc.size(); ++i) {
    b.x.push_back(enc[i]);
    b.x.push_back(x[lead + i] / enc[i]);
    b.enc.push_back(enc[i]);
    b.enc.push_back(1);
  }
  return b;
}

}  // namespace

TEST_CASE("aimet reference: affine quantize / dequantize / quantize_dequantize, bit for bit",
          "[quant][aimet][aimet_reference]") {
  int n = 0;
  for (const json& c : all_cases()) {
    const std::string op = c.at("op");
    if (op != "quantize" && op != "dequantize" && op != "quantize_dequantize") continue;
    INFO("case " << c.at("name").get<std::string>());
    ++n;
    Tensor x = load(c, "x").set_requires_grad(true);
    Tensor scale = load(c, "scale").set_requires_grad(true);
    Tensor offset = load(c, "offset").set_requires_grad(true);
    const Shape xshape = x.shape();
    Tensor xin = x, sin = scale, oin = offset;
    if (!c.at("block_size").is_null()) {
      const BlockShapes b = block_shapes(x.shape(), scale.shape());
      xin = x.reshape(b.x);
      sin = scale.reshape(b.enc);
      oin = offset.reshape(b.enc);
    }
    Tensor out;
    if (op == "dequantize") {
      out = dequantize(xin, sin, oin);
    } else {
      const auto qmin = c.at("qmin").get<std::int64_t>(), qmax = c.at("qmax").get<std::int64_t>();
      out = op == "quantize" ? quantize(xin, sin, oin, qmin, qmax)
                             : quantize_dequantize(xin, sin, oin, qmin, qmax);
    }
    out = out.reshape(xshape);
    check_same(out, c, "out");
    out.backward(load(c, "dy"));
    check_same(x.grad(), c, "dx");
    check_sum(scale.grad(), c, "dscale");
    check_sum(offset.grad(), c, "doffset");
  }
  CHECK(n == 178);
  WARN("largest relative difference of a summed gradient: " << worst_sum_rel());
}

TEST_CASE("aimet reference: MinMaxEncodingAnalyzer statistics and encodings, bit for bit",
          "[quant][aimet][aimet_reference]") {
  int n = 0;
  for (const json& c : all_cases()) {
    const std::string op = c.at("op");
    if (op != "analyzer" && op != "analyzer_from_stats") continue;
    INFO("case " << c.at("name").get<std::string>());
    ++n;
    const auto steps = c.at("num_steps").get<std::int64_t>();
    const bool sym = c.at("symmetric");
    if (op == "analyzer_from_stats") {
      MinMaxStats st{load(c, "stats_min"), load(c, "stats_max")};
      auto [mn, mx] = MinMaxEncodingAnalyzer::compute_encodings_from_stats(st, steps, sym);
      check_same(mn, c, "enc_min");
      check_same(mx, c, "enc_max");
      continue;
    }
    MinMaxEncodingAnalyzer an(c.at("shape").get<Shape>());
    int i = 0;
    for (const json& s : c.at("steps")) {
      INFO("batch " << i++);
      const MinMaxStats batch = an.update_stats(load(s, "x"));
      auto [bmin, bmax] = MinMaxEncodingAnalyzer::compute_encodings_from_stats(batch, steps, sym);
      check_same(bmin, s, "batch_min");
      check_same(bmax, s, "batch_max");
      check_same(an.stats().min, s, "stats_min");
      check_same(an.stats().max, s, "stats_max");
      const auto enc = an.compute_encodings(steps, sym);
      REQUIRE(enc.has_value());
      check_same(enc->first, s, "enc_min");
      check_same(enc->second, s, "enc_max");
    }
  }
  CHECK(n == 30);
}

TEST_CASE("aimet reference: Quantize / QuantizeDequantize modules and range learning",
          "[quant][aimet][aimet_reference]") {
  int n = 0;
  for (const json& c : all_cases()) {
    if (c.at("op") != "quantizer") continue;
    INFO("case " << c.at("name").get<std::string>());
    ++n;
    AffineQuantizer q(c.at("shape").get<Shape>(), c.at("bitwidth"), c.at("symmetric"));
    CHECK(q.qmin() == c.at("qmin").get<std::int64_t>());
    CHECK(q.qmax() == c.at("qmax").get<std::int64_t>());
    q.set_range(load(c, "set_min"), load(c, "set_max"));
    check_same(q.min().detach(), c, "min");
    check_same(q.max().detach(), c, "max");
    check_same(q.get_scale().detach(), c, "scale");
    check_same(q.get_offset().detach(), c, "offset");
    const AffineEncoding enc = q.get_encoding();
    check_same(enc.min().detach(), c, "enc_min");
    check_same(enc.max().detach(), c, "enc_max");

    const Tensor x = load(c, "x");
    Tensor xr = x.detach().set_requires_grad(true);
    const Tensor out = q.quantize_dequantize(xr).data();
    check_same(out.detach(), c, "qdq");
    out.backward(load(c, "dy"));
    check_same(xr.grad(), c, "dx");
    check_sum(q.min().grad(), c, "dmin");
    check_sum(q.max().grad(), c, "dmax");

    const QuantizedTensor xq = q.quantize(x);
    check_same(xq.data().detach(), c, "q");
    check_same(xq.dequantize().data().detach(), c, "q_dequantized");
    CHECK(std::string(dtype_name(xq.quantized_repr().dtype())) ==
          c.at("repr_dtype").get<std::string>());
  }
  CHECK(n == 20);
  WARN("largest relative difference of a summed gradient so far: " << worst_sum_rel());
}

TEST_CASE("aimet reference: compute_encodings over several batches, one all zero",
          "[quant][aimet][aimet_reference]") {
  int n = 0;
  for (const json& c : all_cases()) {
    if (c.at("op") != "compute_encodings") continue;
    INFO("case " << c.at("name").get<std::string>());
    ++n;
    AffineQuantizer q(c.at("shape").get<Shape>(), c.at("bitwidth"), c.at("symmetric"));
    {
      auto scope = q.compute_encodings();
      int i = 0;
      for (const json& s : c.at("steps")) {
        INFO("batch " << i++);
        const Tensor out = q.quantize_dequantize(load(s, "x")).data();
        if (!s.at("out").is_null()) check_same(out.detach(), s, "out");
      }
    }
    check_same(q.min().detach(), c, "min");
    check_same(q.max().detach(), c, "max");
    check_same(q.get_scale().detach(), c, "scale");
    check_same(q.get_offset().detach(), c, "offset");
  }
  CHECK(n == 40);
}

TEST_CASE("aimet reference: AffineEncoding dtype (quantized_repr) for every bitwidth",
          "[quant][aimet][aimet_reference]") {
  int n = 0;
  for (const json& c : all_cases()) {
    if (c.at("op") != "encoding_dtypes") continue;
    for (const json& row : c.at("table")) {
      const int bw = row.at("bitwidth");
      const bool sym = row.at("signed");
      INFO("bitwidth " << bw << (sym ? " signed" : " unsigned"));
      ++n;
      const AffineEncoding e(from_vector<float>({0.5f}, {}), from_vector<float>({0.0f}, {}), bw,
                             sym);
      CHECK(e.qmin() == row.at("qmin").get<std::int64_t>());
      CHECK(e.qmax() == row.at("qmax").get<std::int64_t>());
      CHECK(std::string(dtype_name(e.dtype())) == row.at("dtype").get<std::string>());
    }
  }
  CHECK(n == 64);
}

TEST_CASE("aimet reference: legacy (0.6.1) encoding dicts", "[quant][aimet][aimet_reference]") {
  int n = 0;
  for (const json& c : all_cases()) {
    if (c.at("op") != "legacy_encoding") continue;
    INFO("case " << c.at("name").get<std::string>());
    ++n;
    AffineQuantizer q(c.at("shape").get<Shape>(), c.at("bitwidth"), c.at("symmetric"));
    q.set_range(load(c, "min"), load(c, "max"));
    const json got = encodings_to_json({}, {{"w", q.get_encoding()}}, EncodingFileVersion::V0_6_1);
    const json& list = got.at("param_encodings").at("w");
    const json& want = c.at("legacy");
    REQUIRE(list.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      INFO("channel " << i);
      for (const char* key : {"min", "max", "scale"})
        CHECK(list[i].at(key).get<double>() == want[i].at(key).get<double>());
      CHECK(list[i].at("offset").get<std::int64_t>() == want[i].at("offset").get<std::int64_t>());
      CHECK(list[i].at("bitwidth") == want[i].at("bitwidth"));
      CHECK(list[i].at("dtype") == want[i].at("dtype"));
      CHECK(list[i].at("is_symmetric") == want[i].at("is_symmetric"));
    }
  }
  CHECK(n == 5);
}
