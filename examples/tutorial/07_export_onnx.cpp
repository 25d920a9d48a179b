// Tutorial chapter 7 (docs/tutorial.md): exporting a QAT model to QDQ ONNX. A small conv net is
// quantized with the torch_ao family's default recipe (the observers choose scales while it
// trains for a few steps), switched to eval mode and written with deploy::export_onnx. The file is
// checked with onnx::checker, parsed back, and checked against the model it came from: one
// QuantizeLinear per quantized layer input, one DequantizeLinear per quantized input and weight,
// and the first conv's int8 weight dequantized by hand equal to what the QAT model's weight
// quantizer computes. Without ONNX support (QGRAD_WITH_ONNX, Debian's libonnx-dev) it says so and
// exits with status 77, which ctest reports as Skipped; a failed check exits with status 1.
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "qgrad.h"
#include "tutorial_check.h"

#ifdef QGRAD_WITH_ONNX
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <fstream>

#include "deploy/onnx/onnx_export.h"
#endif

using namespace qgrad;

#ifdef QGRAD_WITH_ONNX
namespace {

// The values of an initializer (float32, int8 or uint8), whichever field holds them.
std::vector<float> values_of(const onnx::TensorProto& t) {
  std::vector<float> v;
  if (t.data_type() == onnx::TensorProto::FLOAT) {
    if (!t.raw_data().empty()) {
      v.resize(t.raw_data().size() / sizeof(float));
      std::memcpy(v.data(), t.raw_data().data(), v.size() * sizeof(float));
    }
    for (float f : t.float_data()) v.push_back(f);
  } else if (t.data_type() == onnx::TensorProto::INT8) {
    for (char c : t.raw_data()) v.push_back(static_cast<std::int8_t>(c));
    for (std::int32_t i : t.int32_data()) v.push_back(static_cast<float>(i));
  } else if (t.data_type() == onnx::TensorProto::UINT8) {
    for (char c : t.raw_data()) v.push_back(static_cast<std::uint8_t>(c));
    for (std::int32_t i : t.int32_data()) v.push_back(static_cast<float>(i));
  }
  return v;
}

}  // namespace
#endif

int main() {
#ifndef QGRAD_WITH_ONNX
  std::printf(
      "SKIPPED: qgrad was built without ONNX support (install libonnx-dev and "
      "libprotobuf-dev, then reconfigure)\n");
  return 77;
#else
  tutorial::Check check;
  Generator gen(0);
  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(1, 8, 3).padding(1), gen));
  model->push_back(std::make_shared<nn::ReLU>());
  model->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(8, 8, 3).padding(1), gen));
  model->push_back(std::make_shared<nn::ReLU>());
  model->push_back(std::make_shared<nn::Flatten>());
  model->push_back(std::make_shared<nn::Linear>(8 * 8 * 8, 4, gen));
  Tensor x = randn({64, 1, 8, 8}, gen);
  Tensor labels = randint(0, 4, {64}, gen);

  // [tutorial:export]
  quant::quantize_model(*model, nlohmann::json{{"family", "torch_ao"}});  // PyTorch's QAT default
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.01));
  for (int step = 0; step < 5; ++step) {  // QAT: the observers pick scales as it trains
    sgd.zero_grad();
    cross_entropy(model->forward(x), labels).backward();
    sgd.step();
  }
  model->eval();                                    // inference form
  quant::FrozenQuantizerStatistics frozen(*model);  // observers off: scales stay as trained

  deploy::OnnxExportOptions options;
  options.input_shape = {1, 8, 8};  // C, H, W; the batch dimension stays symbolic
  const std::string path = "tutorial_qat.onnx";
  deploy::export_onnx(*model, path, options);
  onnx::checker::check_model(path);  // throws onnx::checker::ValidationError on a bad file
  // [/tutorial:export]
  check.that("onnx::checker::check_model accepted the file", true);

  std::ifstream in(path, std::ios::binary);
  onnx::ModelProto proto;
  check.that("the file parses as an ONNX model", proto.ParseFromIstream(&in));
  std::map<std::string, int> ops;
  std::map<std::string, const onnx::NodeProto*> producer;
  std::map<std::string, const onnx::TensorProto*> initializer;
  for (const onnx::NodeProto& node : proto.graph().node()) {
    ++ops[node.op_type()];
    for (const std::string& out : node.output()) producer[out] = &node;
  }
  for (const onnx::TensorProto& t : proto.graph().initializer()) initializer[t.name()] = &t;
  std::printf("nodes:");
  for (const auto& [op, n] : ops) std::printf(" %s x%d", op.c_str(), n);
  std::printf("\n");

  // Expected counts, from the model itself: every quantized layer has an input and a weight
  // quantizer (QuantConv2d / QuantLinear); an input is quantized and dequantized, a weight is
  // stored as integers and only dequantized.
  int layers = 0, convs = 0;
  for (const auto& module : *model) {
    convs += dynamic_cast<const quant::QuantConv2d*>(module.get()) != nullptr;
    layers += dynamic_cast<const quant::QuantConv2d*>(module.get()) != nullptr ||
              dynamic_cast<const quant::QuantLinear*>(module.get()) != nullptr;
  }
  check.that("one QuantizeLinear per quantized layer input", ops["QuantizeLinear"] == layers);
  check.that("one DequantizeLinear per quantized input and weight",
             ops["DequantizeLinear"] == 2 * layers);
  check.that("the convolutions and the linear layer are there",
             ops["Conv"] == convs && ops["Gemm"] == layers - convs);

  // The first conv's weight: int8 codes q with per-channel scale s and zero point z; (q - z) * s
  // must be what the QAT model's weight quantizer computes from its float weight.
  const onnx::NodeProto* conv = nullptr;
  for (const onnx::NodeProto& node : proto.graph().node())
    if (node.op_type() == "Conv") {
      conv = &node;
      break;
    }
  const onnx::NodeProto* dq = conv ? producer[conv->input(1)] : nullptr;
  check.that("the first Conv's weight comes from a DequantizeLinear",
             dq && dq->op_type() == "DequantizeLinear");
  const bool stored = dq && dq->input_size() == 3 && initializer.count(dq->input(0)) &&
                      initializer.count(dq->input(1)) && initializer.count(dq->input(2));
  check.that("its integers, scale and zero point are initializers", stored);
  if (!stored) return check.exit_code();
  const std::vector<float> q = values_of(*initializer.at(dq->input(0)));
  const std::vector<float> s = values_of(*initializer.at(dq->input(1)));
  const std::vector<float> z = values_of(*initializer.at(dq->input(2)));
  auto first = model->at<quant::QuantConv2d>(0);
  std::vector<float> trained;
  {
    NoGradGuard no_grad;
    trained = first->weight_quantizer()->forward(first->weight()).to_vector<float>();
  }
  std::vector<float> dequantized;
  const std::size_t per_channel = q.size() / (s.empty() ? 1 : s.size());
  for (std::size_t i = 0; i < q.size(); ++i)
    dequantized.push_back((q[i] - z[i / per_channel]) * s[i / per_channel]);
  std::printf("first conv: %zu int8 weights, %zu per-channel scales, e.g. q = %g, s = %.8g\n",
              q.size(), s.size(), static_cast<double>(q[0]), static_cast<double>(s[0]));
  check.exact("the exported weight dequantizes to the QAT model's fake-quantized weight",
              dequantized, trained);
  std::remove(path.c_str());
  return check.exit_code();
#endif
}
