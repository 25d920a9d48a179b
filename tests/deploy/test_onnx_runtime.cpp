// The exported models in a real ONNX Runtime (npm's onnxruntime-node 1.30, CPU), against qgrad's
// own forward on the same inputs: the float zoo models (batch norm folded) and QDQ exports of QAT
// models (lenet5bn, MobileNetV2-CIFAR). Hidden cases ([.ort]): ctest runs them through
// tests/deploy/ort/install_ort.sh, which installs the runtime and reports Skipped when node, npm or
// the registry is missing. Also ONNX import's side: full-size torchvision ResNet-18 and
// MobileNetV2 files (gen_onnx_import.py's, weights filled in) in ONNX Runtime against the
// imported qgrad model and PyTorch.
#include <catch2/catch.hpp>

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "deploy/onnx/onnx_export.h"
#include "deploy/onnx/onnx_import.h"
#include "deploy/test_models.h"
#include "support/fixtures.h"
#include "support/scratch_files.h"
#include "support/synthetic_onnx_weights.h"
#include "support/test_paths.h"

using namespace qgrad;

namespace {

std::string ort_dir() {
  const char* d = std::getenv("QGRAD_ORT_DIR");
  if (d == nullptr) FAIL("QGRAD_ORT_DIR is not set: run these cases through install_ort.sh");
  return d;
}

void write_f32(const std::string& path, const std::vector<float>& v) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
  REQUIRE(f.good());
}

std::vector<float> read_f32(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

// ONNX Runtime's output for x from the model in dir's m.onnx (x.f32 and y.f32 are written there).
std::vector<float> run_ort(const qgrad_test::TempDir& dir, const Tensor& x) {
  write_f32(dir.file("x.f32"), x.to_vector<float>());
  std::string dims;
  for (const std::int64_t d : x.shape()) dims += (dims.empty() ? "" : ",") + std::to_string(d);
  const std::string cmd = "node '" + qgrad_test::source_dir() + "/tests/deploy/ort/run_onnx.js' '" +
                          ort_dir() + "' '" + dir.file("m.onnx") + "' '" + dir.file("x.f32") +
                          "' " + dims + " '" + dir.file("y.f32") + "'";
  INFO(cmd);
  REQUIRE(std::system(cmd.c_str()) == 0);
  return read_f32(dir.file("y.f32"));
}

// The model's logits for x from qgrad and from ONNX Runtime on its export.
std::pair<std::vector<float>, std::vector<float>> both(nn::UnaryModule& model, const Tensor& x) {
  qgrad_test::TempDir dir;
  model.eval();
  deploy::OnnxExportOptions options;
  options.input_shape = {x.shape()[1], x.shape()[2], x.shape()[3]};
  deploy::export_onnx(model, dir.file("m.onnx"), options);
  std::vector<float> ort = run_ort(dir, x);
  NoGradGuard no_grad;
  return {model.forward(x).to_vector<float>(), std::move(ort)};
}

// The largest |ours - ort| / (1e-3 + |ours|).
double largest_relative_difference(const std::vector<float>& ours, const std::vector<float>& ort) {
  REQUIRE(ours.size() == ort.size());
  double worst = 0;
  for (std::size_t i = 0; i < ours.size(); ++i)
    worst = std::max(worst, std::fabs(double(ours[i]) - ort[i]) / (1e-3 + std::fabs(ours[i])));
  return worst;
}

// Two [n, classes] logit lists compared: rows with the same argmax, the largest difference and
// the largest |logit| of `ours`.
struct LogitAgreement {
  std::size_t agree = 0, n = 0;
  double worst = 0, range = 0;
};
LogitAgreement compare_logits(const std::vector<float>& ours, const std::vector<float>& ort,
                              std::size_t classes = 10) {
  REQUIRE(ours.size() == ort.size());
  LogitAgreement r;
  r.n = ours.size() / classes;
  for (std::size_t row = 0; row < r.n; ++row) {
    std::size_t a = 0, b = 0;
    for (std::size_t c = 0; c < classes; ++c) {
      const std::size_t i = row * classes + c;
      if (ours[i] > ours[row * classes + a]) a = c;
      if (ort[i] > ort[row * classes + b]) b = c;
      r.worst = std::max(r.worst, std::fabs(double(ours[i]) - ort[i]));
      r.range = std::max(r.range, std::fabs(double(ours[i])));
    }
    r.agree += a == b;
  }
  return r;
}

}  // namespace

TEST_CASE("ONNX Runtime: the float zoo exports compute qgrad's logits", "[.ort]") {
  Generator gen(5);
  const Tensor x = randn({16, 1, 28, 28}, gen);
  for (const char* name : {"lenet5bn", "vggfm", "resnet20"}) {
    INFO("model " << name);
    auto model = nn::make_model(name, 1);
    qgrad_test::randomise_bn(*model);
    const auto [ours, ort] = both(*model, x);
    const double worst = largest_relative_difference(ours, ort);
    INFO("largest relative difference " << worst);
    CHECK(worst < 1e-4);  // float32, other summation orders (and BN folded on one side)
  }
}

TEST_CASE("ONNX Runtime: QDQ exports of QAT models against qgrad's fake-quant forward", "[.ort]") {
  Generator gen(5);
  const Tensor x = randn({64, 1, 28, 28}, gen);
  for (const char* recipe :
       {R"({"family": "torch_ao"})", R"({"family": "nvidia"})", R"({"family": "lsq"})",
        R"({"family": "horizon"})", R"({"family": "aimet"})",
        R"({"family": "pact", "weight": {"num_bits": 4}, "input": {"num_bits": 4}})"}) {
    INFO("recipe " << recipe);
    auto model = qgrad_test::qat_model("lenet5bn", recipe);
    const auto [ours, ort] = both(*model, x);
    const auto [agree, n, worst, range] = compare_logits(ours, ort);
    WARN("recipe " << recipe << ": top-1 agreement " << agree << "/" << n
                   << ", largest logit difference " << worst << " (largest |logit| " << range
                   << ")");
    // ONNX Runtime runs QDQ as integer convolutions with their own requantisation rounding, so an
    // activation can land one step away from the fake-quant value; this untrained model's logits
    // are nearly tied, so that can flip a prediction. Trained-model agreement is verify-deploy's
    // job (issue 12, not done yet); here: the two compute the same network.
    CHECK(agree >= n * 9 / 10);
    CHECK(worst <= 0.05 * range);
  }
}

// The larger zoo models on small RGB images: ResNet-18 (CIFAR stem) and MobileNetV2-CIFAR float
// (batch norms folded; depthwise convolutions as grouped Conv, ReLU6 as Clip), and MobileNetV2's
// QDQ exports (its residual adds on quantized inputs).
TEST_CASE("ONNX Runtime: ResNet-18 and MobileNetV2, float and QDQ, compute qgrad's logits",
          "[.ort]") {
  Generator gen(5);
  const Tensor x = randn({16, 3, 16, 16}, gen);
  for (const char* name : {"resnet18_cifar", "mobilenet_v2_cifar"}) {
    INFO("model " << name);
    auto model = nn::make_model(name, 1, {3, 16, 16});
    qgrad_test::randomise_bn(*model);
    const auto [ours, ort] = both(*model, x);
    const double worst = largest_relative_difference(ours, ort);
    INFO("largest relative difference " << worst);
    CHECK(worst < 1e-4);  // measured 4.3e-5 and 2.4e-5
  }
  for (const char* recipe : {R"({"family": "nvidia"})", R"({"family": "horizon"})"}) {
    INFO("recipe " << recipe);
    auto model = qgrad_test::qat_model("mobilenet_v2_cifar", recipe, {3, 16, 16}, 4);
    const auto [ours, ort] = both(*model, x);
    const auto [agree, n, worst, range] = compare_logits(ours, ort);
    WARN("mobilenet_v2_cifar " << recipe << ": top-1 agreement " << agree << "/" << n
                               << ", largest logit difference " << worst << " (largest |logit| "
                               << range << ")");
    // Measured: 16/16, 0.0013 of 0.21 (nvidia) and 0.0081 of 0.20 (horizon).
    CHECK(agree >= n * 9 / 10);
    CHECK(worst <= 0.05 * range);
  }
}

TEST_CASE("ONNX Runtime: with the recipe's int32 bias, the optimized runtime adds the trained bias",
          "[.ort]") {
  // ONNX Runtime's graph optimizations round a float bias onto the int32 grid s_in * s_w; with
  // "bias": "int32" the export carries the integers training added, so the optimized graph
  // (QGemm / QLinearConv included) computes the fake-quantized network up to float rounding. With
  // a float bias the PACT W4A4 logits here differ by up to 1.6 (range 73), the QDQ test above.
  // (torch.ao's 8-bit untrained model is left out: its integer requantisation ties, not the
  // bias, move its nearly tied logits by 0.006 with or without the int32 bias.)
  Generator gen(5);
  const Tensor x = randn({64, 1, 28, 28}, gen);
  for (
      const char* recipe :
      {R"({"family": "pact", "weight": {"num_bits": 4}, "input": {"num_bits": 4}, "bias": "int32"})",
       R"({"recipe": "lsq_w4a4", "bias": "int32"})"}) {
    INFO("recipe " << recipe);
    auto model = qgrad_test::qat_model("lenet5bn", recipe);
    const auto [ours, ort] = both(*model, x);
    const LogitAgreement c = compare_logits(ours, ort);
    WARN("recipe " << recipe << ": largest logit difference " << c.worst << " (largest |logit| "
                   << c.range << ")");
    CHECK(c.worst <= 1e-5 * c.range);
  }
}

// The other direction: PyTorch's exports of full-size torchvision resnet18() and mobilenet_v2()
// (tests/fixtures/gen_onnx_import.py's structure-only files with their synthetic weights filled
// in) in ONNX Runtime, against the model import_onnx makes of the same file and against PyTorch's
// logits on the same 1x3x224x224 image.
TEST_CASE(
    "ONNX Runtime: imported full-size ResNet-18 and MobileNetV2 compute ONNX Runtime's logits",
    "[.ort]") {
  const Tensor x = qgrad_test::load_fixture("onnx_import", "tv224_input");
  for (const char* name : {"resnet18", "mobilenet_v2"}) {
    INFO("model " << name);
    qgrad_test::TempDir dir;
    const std::string path =
        qgrad_test::fixture_path("onnx_import", std::string(name) + "_structure.onnx");
    qgrad_test::write_bytes(dir.file("m.onnx"), qgrad_test::filled_onnx_file(path));
    auto model = deploy::import_onnx(dir.file("m.onnx"));
    model->eval();
    const Tensor ort = from_vector(run_ort(dir, x), {x.shape()[0], 1000});
    NoGradGuard no_grad;
    const Tensor ours = model->forward(x);
    const Tensor torch = qgrad_test::load_fixture("onnx_import", std::string(name) + "_logits");
    const LogitAgreement c = compare_logits(ours.to_vector<float>(), ort.to_vector<float>(), 1000);
    WARN(name << ": largest |qgrad - ORT| " << c.worst << " (largest |logit| " << c.range << ")");
    // Float32 in other summation orders, as in the PyTorch comparison (test_onnx_import.cpp).
    qgrad_test::require_close(ours, ort, 1e-4, 1e-4, "qgrad vs ORT", qgrad_test::kScaledAtol);
    qgrad_test::require_close(ort, torch, 1e-4, 1e-4, "ORT vs PyTorch", qgrad_test::kScaledAtol);
  }
}
