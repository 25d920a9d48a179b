// ONNX import (deploy/onnx/onnx_import.h) on the files tests/fixtures/gen_onnx_import.py exports
// with PyTorch 1.13 (opset 13): lenet5bn with its BatchNormalization nodes, resnet20 with BN
// folded into conv biases and residual Adds, torchvision's MobileNetV2 at width 0.25 (grouped
// convs, Clip as ReLU6) and a mix of the other operators (AveragePool, Clip as Hardtanh, MatMul +
// Add, Dropout, Reshape, Gemm), and full-size torchvision ResNet-18 and MobileNetV2 on a
// 1x3x224x224 image, from structure-only files whose weights both sides compute
// (support/synthetic_onnx_weights.h). Logits match PyTorch's within rtol 1e-4 and atol 1e-4 x
// max|logit| (float32 sums in another order). Unsupported operators and attributes, hand-edited
// graphs and files that are not ONNX are errors naming the node, the operator or attribute, or the
// file. An imported model goes through quantize_model and one training step.
#include <onnx/onnx_pb.h>

#include <catch2/catch.hpp>
#include <limits>
#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/file_io.h"
#include "deploy/onnx/onnx_import.h"
#include "nn/modules/activation.h"
#include "nn/modules/add.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"
#include "nn/modules/linear.h"
#include "ops/loss/loss.h"
#include "quant/modules/quant_add.h"
#include "quant/modules/quant_conv2d.h"
#include "quant/modules/quant_linear.h"
#include "quant/modules/quantize_model.h"
#include "support/fixtures.h"
#include "support/synthetic_onnx_weights.h"

using namespace qgrad;
using Catch::Matchers::Contains;

namespace {

std::string fixture(const std::string& file) {
  return qgrad_test::fixture_path("onnx_import", file);
}

template <typename M>
int count(nn::Module& model) {
  int n = 0;
  model.apply([&](const std::string&, nn::Module& m) { n += dynamic_cast<M*>(&m) != nullptr; });
  return n;
}

// A one-Conv model (1 -> 1 channel, 3x3) with the given extra attributes, as bytes.
std::string conv_model(const std::string& op, const std::vector<std::int64_t>& pads) {
  onnx::ModelProto model;
  model.set_ir_version(7);
  model.add_opset_import()->set_version(13);
  auto* g = model.mutable_graph();
  g->add_input()->set_name("x");
  g->add_output()->set_name("y");
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  for (auto d : {1, 1, 3, 3}) w->add_dims(d);
  for (int i = 0; i < 9; ++i) w->add_float_data(0.1f * static_cast<float>(i));
  auto* node = g->add_node();
  node->set_name("layer.0/conv");
  node->set_op_type(op);
  node->add_input("x");
  node->add_input("w");
  node->add_output("y");
  if (!pads.empty()) {
    auto* a = node->add_attribute();
    a->set_name("pads");
    a->set_type(onnx::AttributeProto::INTS);
    for (auto p : pads) a->add_ints(p);
  }
  return model.SerializeAsString();
}

}  // namespace

TEST_CASE("onnx import: PyTorch's exports compute PyTorch's logits", "[deploy][onnx_import]") {
  struct Case {
    std::string name;
    int convs, bns, adds, linears;
  };
  for (const Case& c : {Case{"lenet5bn", 2, 2, 0, 3}, Case{"resnet20", 21, 0, 9, 1},
                        Case{"mobilenet_v2_w025", 52, 52, 11, 1}, Case{"ops_mix", 1, 0, 0, 2}}) {
    INFO(c.name);
    auto model = deploy::import_onnx(fixture(c.name + ".onnx"));
    model->eval();
    CHECK(count<nn::Conv2d>(*model) == c.convs);
    CHECK(count<nn::BatchNorm2d>(*model) == c.bns);
    CHECK(count<nn::Add>(*model) == c.adds);
    CHECK(count<nn::Linear>(*model) == c.linears);
    NoGradGuard no_grad;
    const Tensor y = model->forward(load_npy(fixture(c.name + "_input.npy")));
    qgrad_test::require_close(y, load_npy(fixture(c.name + "_logits.npy")), 1e-4, 1e-4, c.name,
                              qgrad_test::kScaledAtol);
  }
}

TEST_CASE("onnx import: full-size torchvision ResNet-18 and MobileNetV2 compute PyTorch's logits",
          "[deploy][onnx_import]") {
  struct Case {
    std::string name;
    int filled;  // float initializers of more than 64 elements (stored without data)
    int convs, bns, adds, linears;
  };
  const Tensor x = load_npy(fixture("tv224_input.npy"));
  for (const Case& c :
       {Case{"resnet18", 82, 20, 20, 8, 1}, Case{"mobilenet_v2", 214, 52, 52, 10, 1}}) {
    INFO(c.name);
    const std::string path = fixture(c.name + "_structure.onnx");
    // The committed file holds no weights: as it is, it is not a model.
    CHECK_THROWS_WITH(deploy::import_onnx(path), Contains("holds 0 values"));
    int filled = 0;
    auto model = deploy::import_onnx_bytes(qgrad_test::filled_onnx_file(path, &filled), c.name);
    CHECK(filled == c.filled);
    model->eval();
    CHECK(count<nn::Conv2d>(*model) == c.convs);
    CHECK(count<nn::BatchNorm2d>(*model) == c.bns);
    CHECK(count<nn::Add>(*model) == c.adds);
    CHECK(count<nn::Linear>(*model) == c.linears);
    NoGradGuard no_grad;
    const Tensor y = model->forward(x);
    qgrad_test::require_close(y, load_npy(fixture(c.name + "_logits.npy")), 1e-4, 1e-4, c.name,
                              qgrad_test::kScaledAtol);
  }
}

TEST_CASE("onnx import: children are named after the nodes and carry the weights",
          "[deploy][onnx_import]") {
  auto model = deploy::import_onnx(fixture("mobilenet_v2_w025.onnx"));
  const auto children = model->named_children();
  REQUIRE(children.size() > 0);
  for (const auto& [name, m] : children) {
    INFO(name);
    CHECK(name.find('.') == std::string::npos);
    CHECK(name.find('/') == std::string::npos);
  }
  // ReLU6 comes through Clip with constant min/max inputs.
  CHECK(count<nn::ReLU6>(*model) == 35);
  // Every weight of the file is a parameter or buffer: nothing is regenerated.
  CHECK(model->num_parameters() > 0);
}

TEST_CASE("onnx import: unsupported operators and attributes name the node",
          "[deploy][onnx_import]") {
  CHECK_THROWS_WITH(deploy::import_onnx(fixture("sigmoid.onnx")),
                    Contains("(Sigmoid)") && Contains("operator 'Sigmoid' is not supported") &&
                        Contains("ONNX node '"));
  CHECK_THROWS_WITH(deploy::import_onnx(fixture("ceil_pool.onnx")),
                    Contains("(MaxPool)") && Contains("attribute 'ceil_mode'"));
  CHECK_THROWS_WITH(deploy::import_onnx_bytes(conv_model("Conv", {0, 0, 1, 1}), "m"),
                    Contains("ONNX node 'layer.0/conv' (Conv)") && Contains("attribute 'pads'") &&
                        Contains("asymmetric"));
  CHECK_THROWS_WITH(deploy::import_onnx_bytes(conv_model("ConvTranspose", {}), "m"),
                    Contains("ONNX node 'layer.0/conv' (ConvTranspose)"));
  // A supported graph imports, named after its node.
  auto ok = deploy::import_onnx_bytes(conv_model("Conv", {1, 1, 1, 1}), "m");
  REQUIRE(ok->named_children().size() == 1);
  CHECK(ok->named_children().begin()->key == "layer_0_conv");
}

namespace {

// conv_model's Conv followed by Clip (no min, max `hi`), the bound given by a Constant node.
std::string clip_model(float hi) {
  onnx::ModelProto model;
  REQUIRE(model.ParseFromString(conv_model("Conv", {})));
  auto* g = model.mutable_graph();
  g->mutable_node(0)->set_output(0, "c");
  auto* bound = g->add_node();
  bound->set_name("bound");
  bound->set_op_type("Constant");
  bound->add_output("hi");
  auto* value = bound->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  value->mutable_t()->add_float_data(hi);
  auto* clip = g->add_node();
  clip->set_name("clip");
  clip->set_op_type("Clip");
  for (const char* in : {"c", "", "hi"}) clip->add_input(in);
  clip->add_output("y");
  return model.SerializeAsString();
}

}  // namespace

TEST_CASE("onnx import: a NaN or infinity in a weight or constant is an error naming it",
          "[deploy][onnx_import]") {
  onnx::ModelProto model;
  REQUIRE(model.ParseFromString(conv_model("Conv", {})));
  auto* w = model.mutable_graph()->mutable_initializer(0);
  w->set_float_data(4, std::numeric_limits<float>::quiet_NaN());
  CHECK_THROWS_WITH(deploy::import_onnx_bytes(model.SerializeAsString(), "'nan.onnx'"),
                    Contains("import_onnx: 'nan.onnx': initializer 'w', read by ONNX node "
                             "'layer.0/conv' (Conv), has a non-finite value (nan) at element 4"));
  // The same in raw_data, as PyTorch writes weights.
  std::vector<float> raw(w->float_data().begin(), w->float_data().end());
  raw[4] = 0.5f;
  raw[7] = -std::numeric_limits<float>::infinity();
  w->clear_float_data();
  w->set_raw_data(std::string(reinterpret_cast<const char*>(raw.data()), raw.size() * 4));
  CHECK_THROWS_WITH(
      deploy::import_onnx_bytes(model.SerializeAsString(), "'inf.onnx'"),
      Contains("'inf.onnx': initializer 'w'") && Contains("non-finite value (-inf) at element 7"));
  raw[7] = 0.5f;
  w->set_raw_data(std::string(reinterpret_cast<const char*>(raw.data()), raw.size() * 4));
  CHECK(
      deploy::import_onnx_bytes(model.SerializeAsString(), "'ok.onnx'")->named_children().size() ==
      1);
  // A Constant node's value, named with its reader.
  CHECK_THROWS_WITH(
      deploy::import_onnx_bytes(clip_model(std::numeric_limits<float>::infinity()), "'c.onnx'"),
      Contains("import_onnx: 'c.onnx': the value of ONNX node 'bound' (Constant), read by ONNX "
               "node 'clip' (Clip), has a non-finite value (inf) at element 0"));
  auto clipped = deploy::import_onnx_bytes(clip_model(6.0f), "'c.onnx'");
  CHECK(count<nn::Hardtanh>(*clipped) == 1);  // no min: Hardtanh(-inf, 6)
}

TEST_CASE("onnx import: files that are not ONNX models are errors naming the file",
          "[deploy][onnx_import]") {
  CHECK_THROWS_AS(deploy::import_onnx(fixture("missing.onnx")), IOError);
  CHECK_THROWS_WITH(deploy::import_onnx_bytes("this is not a model\n", "'t.onnx'"),
                    Contains("'t.onnx' is not an ONNX model"));
  const std::string bytes = read_file(fixture("lenet5bn.onnx"), "test");
  CHECK_THROWS_WITH(deploy::import_onnx_bytes(bytes.substr(0, bytes.size() / 2), "'half.onnx'"),
                    Contains("'half.onnx' is not an ONNX model"));
  CHECK_THROWS_WITH(deploy::import_onnx_bytes("", "'empty.onnx'"), Contains("not an ONNX model"));
}

TEST_CASE("onnx import: an imported model quantizes and trains a step", "[deploy][onnx_import]") {
  auto model = deploy::import_onnx(fixture("resnet20.onnx"));
  const auto replaced = quant::quantize_model(*model, nlohmann::json{{"family", "torch_ao"}});
  CHECK(replaced.size() == 21 + 1 + 9);  // convs, the fc, the residual adds
  CHECK(count<quant::QuantConv2d>(*model) == 21);
  CHECK(count<quant::QuantLinear>(*model) == 1);
  CHECK(count<quant::QuantAdd>(*model) == 9);
  model->train();
  const Tensor x = load_npy(fixture("resnet20_input.npy"));
  const Tensor loss = cross_entropy(model->forward(x), from_vector<std::int64_t>({3, 7}));
  loss.backward();
  int with_grad = 0;
  for (const auto& p : model->parameters()) with_grad += p.grad().defined();
  CHECK(with_grad == static_cast<int>(model->parameters().size()));
  // A child replaced by a module of the wrong arity is refused.
  std::string add_name;
  for (const auto& [name, m] : model->named_children())
    if (dynamic_cast<quant::QuantAdd*>(m.get()) != nullptr) add_name = name;
  REQUIRE(!add_name.empty());
  CHECK_THROWS_AS(model->replace_module(add_name, std::make_shared<nn::ReLU>()), ValueError);
}
