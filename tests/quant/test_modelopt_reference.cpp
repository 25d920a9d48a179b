// qgrad's TensorRT Model Optimizer functions against fixtures computed by modelopt's own Python
// code (tests/fixtures/gen_modelopt_reference.py: modelopt/torch/quantization/tensor_quant.py run
// on PyTorch 1.13, only the float8 dtype PyTorch 1.13 lacks, the compiled extensions and package
// plumbing stubbed): the FP8 fake quant (ScaledE4M3Function, its CPU path _fp8_eager) as
// nvidia::modelopt_scaled_fp8, and the integer fake quant (FakeTensorQuantFunction, its CPU path
// _tensor_quant) as nvidia::fake_tensor_quant, forward and backward, per tensor and per channel,
// with ties, signed zeros, NaN/Inf, zero, tiny and huge amax, and no amax; and NVFP4QTensor /
// MXFP8QTensor's quantize-dequantize round trip as nvidia::block_fake_quant with dynamic NVFP4 /
// MX scales (forward). Every float is compared bit for bit (any NaN matches any NaN).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/factory.h"
#include "core/npy.h"
#include "quant/nvidia/block_quant.h"
#include "quant/nvidia/tensor_quant.h"
#include "support/fixtures.h"

using namespace qgrad;
using namespace qgrad::nvidia;
using nlohmann::json;
using qgrad_test::check_bits_or_nan;

namespace {

const char* kDir = "modelopt_reference";

const json& cases() {
  static const json j = qgrad_test::read_fixture_json(kDir, "cases.json");
  return j.at("cases");
}

Tensor load(const json& c, const char* key) {
  return load_npy(qgrad_test::fixture_path(kDir, c.at(key).get<std::string>()));
}

void check_same(const Tensor& got, const json& c, const char* key) {
  INFO(key);
  const Tensor want = load(c, key);
  CHECK(got.shape() == want.shape());
  check_bits_or_nan(got.contiguous().to_vector<float>(), want.contiguous().to_vector<float>());
}

bool has_infinite_amax(const json& c) {
  if (!c.contains("amax")) return false;
  for (float a : load(c, "amax").to_vector<float>())
    if (std::isinf(a)) return true;
  return false;
}

// Runs `fn` on every case of `op`, checks out and dx; returns the number of cases. An infinite
// amax is the one documented difference: modelopt computes scale 0 and 1 / scale = Inf, so every
// output is NaN; qgrad refuses it with a ValueError naming the op.
template <typename Fn>
int run_cases(const std::string& op, const Fn& fn) {
  int n = 0;
  for (const json& c : cases()) {
    if (c.at("op") != op) continue;
    INFO("case " << c.at("name").get<std::string>());
    ++n;
    Tensor x = load(c, "x").set_requires_grad(true);
    if (has_infinite_amax(c)) {
      for (float v : load(c, "out").to_vector<float>()) CHECK(std::isnan(v));
      CHECK_THROWS_AS(fn(c, x), ValueError);
      continue;
    }
    Tensor out = fn(c, x);
    check_same(out, c, "out");
    out.backward(load(c, "dy"));
    check_same(x.grad(), c, "dx");
  }
  return n;
}

}  // namespace

TEST_CASE("modelopt reference: FP8 fake quant (scaled_e4m3), bit for bit",
          "[quant][nvidia][modelopt_reference]") {
  const int n = run_cases("scaled_e4m3", [](const json& c, const Tensor& x) {
    return modelopt_scaled_fp8(x, c.contains("amax") ? load(c, "amax") : Tensor());
  });
  CHECK(n >= 19);
}

TEST_CASE("modelopt reference: integer fake quant (fake_tensor_quant), bit for bit",
          "[quant][nvidia][modelopt_reference]") {
  const int n = run_cases("fake_tensor_quant", [](const json& c, const Tensor& x) {
    return fake_tensor_quant(x, load(c, "amax"), c.at("num_bits").get<int>(),
                             c.at("unsigned").get<bool>(), c.at("narrow_range").get<bool>());
  });
  CHECK(n >= 14);
}

TEST_CASE("modelopt_scaled_fp8 without amax: E4M3 only, as modelopt's torch.float8_e4m3fn cast",
          "[quant][nvidia][modelopt_reference]") {
  const Tensor x = from_vector<float>({1.0f, 500.0f}, {2});
  CHECK_THROWS_WITH(modelopt_scaled_fp8(x, Tensor(), kE5M2),
                    Catch::Contains("modelopt_scaled_fp8") && Catch::Contains("only E4M3"));
  CHECK_NOTHROW(modelopt_scaled_fp8(x, from_vector<float>({600.0f}, {}), kE5M2));
}

TEST_CASE("modelopt reference: NVFP4 and MXFP8 quantize-dequantize, bit for bit",
          "[quant][nvidia][modelopt_reference]") {
  int n = 0;
  for (const json& c : cases()) {
    const std::string op = c.at("op");
    if (op != "nvfp4" && op != "mxfp8") continue;
    INFO("case " << c.at("name").get<std::string>());
    ++n;
    BlockQuantSpec spec;
    spec.num_bits = op == "nvfp4" ? NumBits(2, 1) : NumBits(4, 3);
    spec.block_sizes.axes = {{-1, c.at("block").get<std::int64_t>()}};
    spec.block_sizes.type = BlockQuantType::Dynamic;
    spec.block_sizes.scale_bits = op == "nvfp4" ? NumBits(4, 3) : NumBits(kE8M0);
    check_same(block_fake_quant(load(c, "x"), spec), c, "out");
  }
  CHECK(n >= 8);
}
