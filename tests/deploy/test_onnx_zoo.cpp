// ONNX export of the larger zoo models (ResNet-32, ResNet-18 with either stem, MobileNetV2 and
// its CIFAR variant): quantized by every recipe family's default recipe (PACT's at W4A4), observed
// or calibrated
// on one small batch, each exports as QDQ ONNX that passes onnx::checker (build_onnx_model runs
// it); the graph has a DequantizeLinear per quantized weight, MobileNetV2's depthwise
// convolutions are Conv nodes with group == channels, its ReLU6 a Clip and its residual sums Add
// nodes on quantized inputs. The images are small (the export does not depend on their size).
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "deploy/onnx/onnx_export.h"
#include "deploy/test_models.h"
#include "quant/recipe/quantizer_settings.h"

using namespace qgrad;
using qgrad_test::qat_model;

namespace {

std::size_t count_ops(const onnx::ModelProto& m, const std::string& op) {
  return static_cast<std::size_t>(std::count_if(m.graph().node().begin(), m.graph().node().end(),
                                                [&](const auto& n) { return n.op_type() == op; }));
}

onnx::ModelProto export_for(const nn::Module& model, const nn::ImageShape& input) {
  deploy::OnnxExportOptions options;
  options.input_shape = {input.channels, input.height, input.width};
  return deploy::build_onnx_model(model, options);
}

std::int64_t group_of(const onnx::NodeProto& n) {
  for (const auto& a : n.attribute())
    if (a.name() == "group") return a.i();
  return 1;
}

// The family's default recipe; PACT at W4A4 (DoReFa's 8-bit weight grid does not fit int8).
std::string recipe_of(const std::string& family) {
  if (family == "pact")
    return R"({"family": "pact", "weight": {"num_bits": 4}, "input": {"num_bits": 4}})";
  return R"({"family": ")" + family + R"("})";
}

}  // namespace

TEST_CASE("ONNX export: ResNet-32 and ResNet-18 with every family as checked QDQ", "[onnx]") {
  struct Case {
    const char* model;
    nn::ImageShape input;
    std::size_t convs, adds;  // stem + 2 per block + projections; one add per block
  };
  for (const Case& c :
       {Case{"resnet32", {1, 28, 28}, 33, 15}, Case{"resnet18_cifar", {3, 16, 16}, 20, 8}}) {
    for (const std::string& family : quant::quant_family_names()) {
      INFO(c.model << " " << family);
      auto model = qat_model(c.model, recipe_of(family), c.input, 2);
      const onnx::ModelProto m = export_for(*model, c.input);
      CHECK(count_ops(m, "Conv") == c.convs);
      CHECK(count_ops(m, "Add") == c.adds);
      CHECK(count_ops(m, "Gemm") == 1);
      CHECK(count_ops(m, "DequantizeLinear") > c.convs);
    }
  }
  // The ImageNet stem: 7x7 stride 2 and a MaxPool.
  auto model = qat_model("resnet18", R"({"family": "torch_ao"})", {3, 32, 32}, 2);
  const onnx::ModelProto m = export_for(*model, {3, 32, 32});
  CHECK(count_ops(m, "MaxPool") == 1);
  CHECK(count_ops(m, "Conv") == 20);
}

TEST_CASE("ONNX export: MobileNetV2 with every family as checked QDQ", "[onnx]") {
  // Every family on the CIFAR variant; the ImageNet one (the same layers, other strides) with two.
  for (const char* name : {"mobilenet_v2_cifar", "mobilenet_v2"}) {
    for (const std::string& family : quant::quant_family_names()) {
      if (name == std::string("mobilenet_v2") && family != "torch_ao" && family != "nvidia")
        continue;
      INFO(name << " " << family);
      auto model = qat_model(name, recipe_of(family), {3, 16, 16}, 2);
      const onnx::ModelProto m = export_for(*model, {3, 16, 16});
      // 52 convolutions (17 of them depthwise), 35 ReLU6 (plus a Clip for each activation
      // quantizer whose grid is narrower than int8), 10 residual adds, one Gemm.
      CHECK(count_ops(m, "Conv") == 52);
      std::size_t depthwise = 0;
      for (const auto& n : m.graph().node())
        if (n.op_type() == "Conv" && group_of(n) > 1) ++depthwise;
      CHECK(depthwise == 17);
      CHECK(count_ops(m, "Clip") >= 35);
      CHECK(count_ops(m, "Add") == 10);
      CHECK(count_ops(m, "Gemm") == 1);
      CHECK(count_ops(m, "DequantizeLinear") > 53);
    }
  }
}
