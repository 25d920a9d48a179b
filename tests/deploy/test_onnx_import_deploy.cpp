// Imported ONNX models (nn::Graph) through the deploy paths: quantized with quant::quantize_model
// (fuse_bn too: a Conv2d whose output only a BatchNorm2d reads), converted to int8 by
// quant::convert's graph walk (convert_graph.cpp) and compared with their fake-quantized forward
// on random inputs as the zoo's int8 tests compare (int8_agreement.h), and exported: the float
// export of an imported model imports back to the same logits (BN folded, so within float
// rounding), the QDQ export passes ONNX's checker. A value two readers want on different grids is
// an error naming both.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "deploy/int8/convert.h"
#include "deploy/int8_agreement.h"
#include "deploy/onnx/onnx_export.h"
#include "deploy/onnx/onnx_import.h"
#include "nn/modules/conv.h"
#include "nn/modules/flatten.h"
#include "nn/modules/graph.h"
#include "nn/modules/linear.h"
#include "nn/modules/pooling.h"
#include "quant/modules/calibrate.h"
#include "quant/modules/quant_conv_bn2d.h"
#include "quant/modules/quant_recipe.h"
#include "quant/modules/quantize_model.h"
#include "support/fixtures.h"

using namespace qgrad;
using Catch::Matchers::Contains;
using qgrad_test::agreement;
using qgrad_test::Agreement;

namespace {

std::string fixture(const std::string& file) {
  return qgrad_test::fixture_path("onnx_import", file);
}

// The imported model quantized by `recipe`, observed or calibrated on one seeded batch, in eval
// mode (as test_models.h's qat_model does for the zoo).
std::shared_ptr<nn::Graph> imported_qat(const std::string& file, const std::string& recipe,
                                        const nn::ImageShape& input) {
  auto model = deploy::import_onnx(fixture(file));
  const quant::QuantRecipe r = quant::QuantRecipe::parse(recipe);
  quant::quantize_model(*model, r);
  Generator gen(3);
  const Tensor x = randn({4, input.channels, input.height, input.width}, gen);
  if (r.family() == quant::QuantFamily::NVIDIA) {
    quant::calibrate_model(
        *model, 1, [&](std::int64_t) { model->forward(x); }, r.calibration_options());
  } else {
    NoGradGuard no_grad;
    model->forward(x);
  }
  model->eval();
  return model;
}

template <typename M>
int count(nn::Module& model) {
  int n = 0;
  model.apply([&](const std::string&, nn::Module& m) { n += dynamic_cast<M*>(&m) != nullptr; });
  return n;
}

}  // namespace

TEST_CASE("onnx import deploy: imported models convert to int8 and give the fake-quant logits",
          "[deploy][onnx_import]") {
  struct Case {
    const char* file;
    nn::ImageShape input;
    const char* recipe;
    double steps, off;  // bounds on max_steps and off; measured values in the comments
  };
  // The bounds of the zoo's int8 tests for the same networks (test_int8_convert.cpp).
  const Case cases[] = {
      {"lenet5bn.onnx", {1, 28, 28}, R"({"family": "torch_ao"})", 1.5, 0.02},  // 2e-5, 0
      {"lenet5bn.onnx",
       {1, 28, 28},
       R"({"family": "torch_ao", "fuse_bn": true})",
       1.5,
       0.02},                                                                        // 2e-5, 0
      {"lenet5bn.onnx", {1, 28, 28}, R"({"family": "nvidia"})", 1.5, 0.02},          // 4e-5, 0
      {"lenet5bn.onnx", {1, 28, 28}, R"({"family": "lsq"})", 1.5, 0.02},             // 0.25, 0
      {"resnet20.onnx", {1, 28, 28}, R"({"family": "torch_ao"})", 8.0, 0.2},         // 0.95, 0.063
      {"resnet20.onnx", {1, 28, 28}, R"({"family": "nvidia"})", 8.0, 0.2},           // 0.70, 0.013
      {"mobilenet_v2_w025.onnx", {3, 32, 32}, R"({"family": "nvidia"})", 8.0, 0.3},  // 5e-5, 0
      {"mobilenet_v2_w025.onnx",
       {3, 32, 32},
       R"({"family": "horizon", "fuse_bn": true})",
       1.5,
       0.02},  // 3e-5, 0
  };
  for (const Case& k : cases) {
    INFO(k.file << " " << k.recipe);
    auto model = imported_qat(k.file, k.recipe, k.input);
    const Agreement a = agreement(*model, 16, 11, quant::ConvertOptions(), k.input);
    INFO("top-1 agreement " << a.top1 << ", max difference " << a.max_steps << " steps, " << a.off
                            << " of the logits more than half a step apart");
    CHECK(a.top1 >= 15.0 / 16);
    CHECK(a.max_steps <= k.steps);
    CHECK(a.off <= k.off);
    // The QDQ export of the same model passes ONNX's checker (build_onnx_model runs it).
    deploy::OnnxExportOptions o;
    o.input_shape = {k.input.channels, k.input.height, k.input.width};
    CHECK_NOTHROW(deploy::build_onnx_model(*model, o));
  }
  // fuse_bn fuses the imported Conv -> BatchNormalization pairs.
  CHECK(count<quant::QuantConvBn2d>(*imported_qat(
            "lenet5bn.onnx", R"({"family": "torch_ao", "fuse_bn": true})", {1, 28, 28})) == 2);
  CHECK(count<quant::QuantConvBn2d>(*imported_qat(
            "mobilenet_v2_w025.onnx", R"({"family": "horizon", "fuse_bn": true})", {3, 32, 32})) ==
        52);
}

TEST_CASE("onnx import deploy: the float export of an imported model imports back to its logits",
          "[deploy][onnx_import]") {
  struct Case {
    const char* file;
    nn::ImageShape input;
  };
  for (const Case& k : {Case{"lenet5bn.onnx", {1, 28, 28}}, Case{"resnet20.onnx", {1, 28, 28}},
                        Case{"mobilenet_v2_w025.onnx", {3, 32, 32}}}) {
    INFO(k.file);
    auto model = deploy::import_onnx(fixture(k.file));
    model->eval();
    deploy::OnnxExportOptions o;
    o.input_shape = {k.input.channels, k.input.height, k.input.width};
    std::string bytes;
    REQUIRE(deploy::build_onnx_model(*model, o).SerializeToString(&bytes));
    auto again = deploy::import_onnx_bytes(bytes, "the export");
    again->eval();
    Generator gen(5);
    const Tensor x = randn({2, k.input.channels, k.input.height, k.input.width}, gen);
    NoGradGuard no_grad;
    const std::vector<float> a = again->forward(x).to_vector<float>();
    const std::vector<float> b = model->forward(x).to_vector<float>();
    REQUIRE(a.size() == b.size());
    float scale = 0, diff = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      scale = std::max(scale, std::abs(b[i]));
      diff = std::max(diff, std::abs(a[i] - b[i]));
    }
    INFO("max difference " << diff << " of max|logit| " << scale);
    CHECK(diff <= 1e-5f * scale);
  }
}

TEST_CASE("onnx import deploy: a value read on two grids is an error naming both readers",
          "[deploy][onnx_import]") {
  Generator gen(1);
  auto g = std::make_shared<nn::Graph>("x", "out");
  g->add_node("conv1", std::make_shared<nn::Conv2d>(nn::Conv2dOptions(1, 4, 3), gen), {"x"}, "y");
  g->add_node("conv2", std::make_shared<nn::Conv2d>(nn::Conv2dOptions(4, 4, 3), gen), {"y"}, "z");
  g->add_node("pool", std::make_shared<nn::AdaptiveAvgPool2d>(Shape{1}), {"y"}, "p");
  g->add_node("flat", std::make_shared<nn::Flatten>(), {"p"}, "f");
  g->add_node("fc", std::make_shared<nn::Linear>(nn::LinearOptions(4, 2), gen), {"f"}, "out");
  quant::quantize_model(*g, nlohmann::json{{"family", "torch_ao"}});
  {
    NoGradGuard no_grad;
    g->forward(randn({2, 1, 8, 8}, gen));
  }
  g->eval();
  REQUIRE_THROWS_WITH(quant::convert(*g), Contains("value 'y' is read on two grids") &&
                                              Contains("layer 'conv2'") &&
                                              Contains("float32 by layer 'pool'"));
}
