// ONNX export (deploy/onnx): every zoo model, float and QDQ (torch.ao, pytorch_quantization,
// Horizon and AIMET recipes), passes onnx::checker::check_model; the graph's structure (node types
// in order, initializer shapes), the BN folding and the QDQ scales and zero points are checked
// against qgrad's own modules; unsupported quantizers, bad scales, unknown layers and unwritable
// paths are clear errors that leave no file behind. No ONNX runtime runs here (see docs/deploy.md).
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "deploy/onnx/onnx_export.h"
#include "deploy/test_models.h"
#include "nn/models/zoo.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"
#include "nn/modules/dropout.h"
#include "nn/modules/sequential.h"
#include "ops/binary/binary.h"
#include "quant/aimet/affine_quantize.h"
#include "quant/horizon/horizon_fake_quantize.h"
#include "quant/learnable/dorefa.h"
#include "quant/modules/aimet_quantizer.h"
#include "quant/modules/calibrate.h"
#include "quant/modules/fused_fake_quantize.h"
#include "quant/modules/horizon_fake_quantize.h"
#include "quant/modules/int32_bias.h"
#include "quant/modules/pact_activation_quantizer.h"
#include "quant/modules/quant_conv2d.h"
#include "quant/modules/quant_linear.h"
#include "quant/modules/quant_recipe.h"
#include "quant/modules/quantize_model.h"
#include "quant/modules/tensor_quantizer.h"
#include "quant/torch_ao/fake_quantize.h"
#include "support/test_paths.h"

using namespace qgrad;
using qgrad_test::qat_model;
using qgrad_test::randomise_bn;

namespace {

std::vector<std::string> op_types(const onnx::ModelProto& m) {
  std::vector<std::string> ops;
  for (const auto& n : m.graph().node()) ops.push_back(n.op_type());
  return ops;
}

std::size_t count(const std::vector<std::string>& ops, const std::string& op) {
  return static_cast<std::size_t>(std::count(ops.begin(), ops.end(), op));
}

const onnx::TensorProto& initializer(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& t : m.graph().initializer())
    if (t.name() == name) return t;
  FAIL("no initializer " << name);
  throw std::logic_error("unreachable");
}

std::vector<std::int64_t> dims(const onnx::TensorProto& t) {
  return std::vector<std::int64_t>(t.dims().begin(), t.dims().end());
}

}  // namespace

TEST_CASE("ONNX export: lenet5bn as float ONNX, BN folded, passes the checker", "[onnx]") {
  auto model = nn::make_model("lenet5bn", 1);
  randomise_bn(*model);
  model->eval();
  const onnx::ModelProto m = deploy::build_onnx_model(*model);
  CHECK(m.opset_import(0).version() == 13);
  CHECK(op_types(m) == std::vector<std::string>{"Conv", "Relu", "MaxPool", "Conv", "Relu",
                                                "MaxPool", "Flatten", "Gemm", "Relu", "Gemm",
                                                "Relu", "Gemm"});
  CHECK(dims(initializer(m, "0_weight")) == std::vector<std::int64_t>{6, 1, 5, 5});
  CHECK(dims(initializer(m, "0_bias")) == std::vector<std::int64_t>{6});
  CHECK(dims(initializer(m, "9_weight")) == std::vector<std::int64_t>{120, 256});
  CHECK(m.graph().input(0).name() == "input");
  CHECK(m.graph().output(0).name() == "output");

  // W' = W * gamma / sigma, b' = (0 - mean) * gamma / sigma + beta, per output channel.
  auto conv = std::dynamic_pointer_cast<nn::Sequential>(model)->at<nn::Conv2d>(0);
  auto bn = std::dynamic_pointer_cast<nn::Sequential>(model)->at<nn::BatchNorm2d>(1);
  const auto w = conv->weight().to_vector<double>();
  const auto g = bn->weight().to_vector<double>(), beta = bn->bias().to_vector<double>();
  const auto mu = bn->running_mean().to_vector<double>();
  const auto var = bn->running_var().to_vector<double>();
  const auto& wf = initializer(m, "0_weight");
  const auto& bf = initializer(m, "0_bias");
  for (int c = 0; c < 6; ++c) {
    const double k = g[c] / std::sqrt(var[c] + 1e-5);
    CHECK(bf.float_data(c) == Approx(beta[c] - mu[c] * k).epsilon(1e-6));
    for (int i = 0; i < 25; ++i)
      CHECK(wf.float_data(c * 25 + i) == Approx(w[c * 25 + i] * k).epsilon(1e-6));
  }
}

TEST_CASE("ONNX export: vggfm and resnet20 as float ONNX pass the checker", "[onnx]") {
  auto vgg = nn::make_model("vggfm", 1);
  vgg->eval();
  const auto ops = op_types(deploy::build_onnx_model(*vgg));
  CHECK(count(ops, "Conv") == 4);
  CHECK(count(ops, "BatchNormalization") == 0);
  CHECK(count(ops, "Gemm") == 2);

  auto resnet = nn::make_model("resnet20", 1);
  randomise_bn(*resnet);
  resnet->eval();
  const onnx::ModelProto m = deploy::build_onnx_model(*resnet);
  const auto rops = op_types(m);
  CHECK(count(rops, "Conv") == 21);  // 19 3x3 + 2 projection shortcuts
  CHECK(count(rops, "Add") == 9);
  CHECK(count(rops, "BatchNormalization") == 0);
  CHECK(rops[rops.size() - 3] == "GlobalAveragePool");
  CHECK(rops.back() == "Gemm");
  CHECK(dims(initializer(m, "layer2.0.downsample.0_weight")) ==
        std::vector<std::int64_t>{32, 16, 1, 1});
}

TEST_CASE("ONNX export: torch.ao QAT lenet5bn as QDQ with torch.ao's scales", "[onnx]") {
  auto model = qat_model("lenet5bn", R"({"family": "torch_ao"})");
  const onnx::ModelProto m = deploy::build_onnx_model(*model);
  const auto ops = op_types(m);
  // Five quantized layers: one Q/DQ pair per input, one weight DQ each.
  CHECK(count(ops, "QuantizeLinear") == 5);
  CHECK(count(ops, "DequantizeLinear") == 10);
  // reduce_range: the activation grid [0, 127] is narrower than uint8, so a Clip comes first.
  CHECK(count(ops, "Clip") == 5);
  CHECK(std::vector<std::string>(ops.begin(), ops.begin() + 6) ==
        std::vector<std::string>{"Clip", "QuantizeLinear", "DequantizeLinear", "DequantizeLinear",
                                 "Conv", "BatchNormalization"});

  auto seq = std::dynamic_pointer_cast<nn::Sequential>(model);
  auto qconv = seq->at<quant::QuantConv2d>(0);
  const auto& in_fq =
      dynamic_cast<const quant::FusedMovingAvgObsFakeQuantize&>(*qconv->input_quantizer());
  const auto& w_fq =
      dynamic_cast<const quant::FusedMovingAvgObsFakeQuantize&>(*qconv->weight_quantizer());
  CHECK(initializer(m, "0_input_scale").float_data(0) == in_fq.scale().item<float>());
  CHECK(initializer(m, "0_input_zero_point").data_type() == onnx::TensorProto_DataType_UINT8);
  CHECK(initializer(m, "0_input_zero_point").int32_data(0) == in_fq.zero_point().item<int>());
  const auto& ws = initializer(m, "0_weight_scale");
  CHECK(dims(ws) == std::vector<std::int64_t>{6});
  const auto scales = w_fq.scale().to_vector<float>();
  for (int c = 0; c < 6; ++c) CHECK(ws.float_data(c) == scales[c]);
  const auto& wq = initializer(m, "0_weight_quantized");
  CHECK(wq.data_type() == onnx::TensorProto_DataType_INT8);
  CHECK(dims(wq) == std::vector<std::int64_t>{6, 1, 5, 5});
  // The DequantizeLinear of the weight is per axis 0; the integers times the scale give back
  // torch.ao's fake-quantized weight.
  bool per_axis = false;
  for (const auto& n : m.graph().node())
    if (n.op_type() == "DequantizeLinear" && n.input(0) == "0_weight_quantized")
      for (const auto& a : n.attribute()) per_axis = per_axis || (a.name() == "axis" && a.i() == 0);
  CHECK(per_axis);
  const auto wfq = ao::fake_quantize_per_channel_affine(qconv->weight().detach(), w_fq.scale(),
                                                        w_fq.zero_point(), 0, -128, 127)
                       .to_vector<float>();
  for (int i = 0; i < 150; ++i)
    CHECK(wq.int32_data(i) * scales[i / 25] == Approx(wfq[i]).margin(1e-7));
}

TEST_CASE("ONNX export: torch.ao fuse_bn resnet20 as QDQ: QuantConvBn2d folded, adds quantized",
          "[onnx]") {
  auto model = qat_model("resnet20", R"({"family": "torch_ao", "fuse_bn": true})");
  const auto ops = op_types(deploy::build_onnx_model(*model));
  CHECK(count(ops, "Conv") == 21);
  CHECK(count(ops, "BatchNormalization") == 0);  // folded as torch.ao's convert does
  CHECK(count(ops, "Add") == 9);
  // 21 conv inputs + 1 fc input + 2 per add.
  CHECK(count(ops, "QuantizeLinear") == 21 + 1 + 18);
}

TEST_CASE("ONNX export: pytorch_quantization QAT as QDQ with scale amax / max_bound", "[onnx]") {
  for (const char* name : {"lenet5bn", "vggfm", "resnet20"}) {
    INFO(name);
    auto model = qat_model(name, R"({"family": "nvidia"})");
    const onnx::ModelProto m = deploy::build_onnx_model(*model);
    CHECK(count(op_types(m), "Clip") == 0);  // signed 8-bit: the full int8 range
  }
  auto model = qat_model("lenet5bn", R"({"family": "nvidia"})");
  const onnx::ModelProto m = deploy::build_onnx_model(*model);
  auto qlin = std::dynamic_pointer_cast<nn::Sequential>(model)->at<quant::QuantLinear>(9);
  const auto& in_q = dynamic_cast<const quant::TensorQuantizer&>(*qlin->input_quantizer());
  CHECK(initializer(m, "9_input_scale").float_data(0) ==
        static_cast<float>(in_q.amax().item<double>() / 127));
  CHECK(initializer(m, "9_input_zero_point").data_type() == onnx::TensorProto_DataType_INT8);
  const auto& w_q = dynamic_cast<const quant::TensorQuantizer&>(*qlin->weight_quantizer());
  const auto amax = w_q.amax().to_vector<double>();
  const auto& ws = initializer(m, "9_weight_scale");
  REQUIRE(ws.float_data_size() == 120);
  for (int c = 0; c < 120; ++c) CHECK(ws.float_data(c) == static_cast<float>(amax[c] / 127));
}

TEST_CASE("ONNX export: Horizon and AIMET QAT as QDQ with their own scales and zero points",
          "[onnx]") {
  for (const char* name : {"lenet5bn", "vggfm", "resnet20"}) {
    for (const char* recipe : {R"({"family": "horizon"})", R"({"family": "aimet"})"}) {
      INFO(name << " " << recipe);
      auto model = qat_model(name, recipe);
      CHECK_NOTHROW(deploy::build_onnx_model(*model));  // includes the checker
    }
  }
  // Horizon: its scale, zero point 0, the int8 weights its own kernel gives.
  auto horizon = qat_model("lenet5bn", R"({"family": "horizon"})");
  const onnx::ModelProto hm = deploy::build_onnx_model(*horizon);
  auto hlin = std::dynamic_pointer_cast<nn::Sequential>(horizon)->at<quant::QuantLinear>(9);
  const auto& hin = dynamic_cast<const quant::HorizonFakeQuantize&>(*hlin->input_quantizer());
  CHECK(initializer(hm, "9_input_scale").float_data(0) == hin.scale().item<float>());
  CHECK(initializer(hm, "9_input_zero_point").data_type() == onnx::TensorProto_DataType_INT8);
  CHECK(initializer(hm, "9_input_zero_point").int32_data(0) == 0);
  const auto& hw = dynamic_cast<const quant::HorizonFakeQuantize&>(*hlin->weight_quantizer());
  const Tensor hfq = horizon::fake_quantize(hlin->weight().detach(), hw.scale().detach(),
                                            hw.options().dtype_, hw.options().ch_axis_);
  const auto& hwq = initializer(hm, "9_weight_quantized");
  const std::vector<float> hv = hfq.contiguous().to_vector<float>();
  const std::vector<float> hs = hw.scale().to_vector<float>();
  REQUIRE(hwq.int32_data_size() == static_cast<int>(hv.size()));
  for (std::size_t i = 0; i < hv.size(); ++i) {
    const float sc = hs.size() == 1 ? hs[0] : hs[i / 256];  // [120, 256] weight, per channel 0
    CHECK(static_cast<float>(hwq.int32_data(static_cast<int>(i))) * sc == hv[i]);
  }
  // AIMET: its scale, zero point minus its offset (uint8 inputs), its own quantize's integers.
  auto aimet_model = qat_model("lenet5bn", R"({"family": "aimet"})");
  const onnx::ModelProto am = deploy::build_onnx_model(*aimet_model);
  auto alin = std::dynamic_pointer_cast<nn::Sequential>(aimet_model)->at<quant::QuantLinear>(9);
  auto& ain = dynamic_cast<quant::AimetQuantizeDequantize&>(*alin->input_quantizer());
  CHECK(initializer(am, "9_input_scale").float_data(0) == ain.get_scale().item<float>());
  CHECK(initializer(am, "9_input_zero_point").data_type() == onnx::TensorProto_DataType_UINT8);
  CHECK(initializer(am, "9_input_zero_point").int32_data(0) == -ain.get_offset().item<double>());
  auto& aw = dynamic_cast<quant::AimetQuantizeDequantize&>(*alin->weight_quantizer());
  const std::vector<float> aq = aimet::quantize(alin->weight().detach(), aw.get_scale().detach(),
                                                aw.get_offset().detach(), aw.qmin(), aw.qmax())
                                    .contiguous()
                                    .to_vector<float>();
  const auto& awq = initializer(am, "9_weight_quantized");
  REQUIRE(awq.int32_data_size() == static_cast<int>(aq.size()));
  for (std::size_t i = 0; i < aq.size(); ++i)
    CHECK(awq.int32_data(static_cast<int>(i)) == static_cast<int>(aq[i]));
}

TEST_CASE("ONNX export: 4-bit weights travel as int8 on their grid, 4-bit activations clipped",
          "[onnx]") {
  auto model = qat_model("lenet5bn", R"({"family": "nvidia", "weight": {"num_bits": 4, "axis": 0},
                                         "input": {"num_bits": 4}})");
  const onnx::ModelProto m = deploy::build_onnx_model(*model);
  const auto& wq = initializer(m, "0_weight_quantized");
  CHECK(wq.data_type() == onnx::TensorProto_DataType_INT8);
  for (int v : wq.int32_data()) CHECK((v >= -8 && v <= 7));
  const auto ops = op_types(m);
  CHECK(count(ops, "Clip") == 5);
  CHECK(ops[0] == "Clip");
  auto qconv = std::dynamic_pointer_cast<nn::Sequential>(model)->at<quant::QuantConv2d>(0);
  const double amax =
      dynamic_cast<const quant::TensorQuantizer&>(*qconv->input_quantizer()).amax().item<double>();
  const float scale = static_cast<float>(amax / 7);
  CHECK(initializer(m, "0_input_scale").float_data(0) == scale);
  CHECK(initializer(m, "0_input_clip_max").float_data(0) == static_cast<float>(7.0 * scale));
  CHECK(initializer(m, "0_input_clip_min").float_data(0) == static_cast<float>(-8.0 * scale));
}

TEST_CASE("ONNX export: PACT W4A4 as QDQ: alpha / 15 on [0, 15], DoReFa's odd integers at 1/15",
          "[onnx]") {
  const char* recipe = R"({"family": "pact", "weight": {"num_bits": 4}, "input": {"num_bits": 4}})";
  for (const char* name : {"lenet5bn", "vggfm", "resnet20"}) {
    INFO(name);
    auto model = qat_model(name, recipe);
    CHECK_NOTHROW(deploy::build_onnx_model(*model));  // includes the checker
  }
  auto model = qat_model("lenet5bn", recipe);
  auto lin = std::dynamic_pointer_cast<nn::Sequential>(model)->at<quant::QuantLinear>(9);
  auto& in = dynamic_cast<quant::PactActivationQuantizer&>(*lin->input_quantizer());
  in.alpha().detach().fill_(3.7);  // a learned alpha, not the initial 10
  const onnx::ModelProto m = deploy::build_onnx_model(*model);
  const float scale = 3.7f / 15.0f;
  CHECK(initializer(m, "9_input_scale").float_data(0) == scale);
  CHECK(initializer(m, "9_input_zero_point").data_type() == onnx::TensorProto_DataType_UINT8);
  CHECK(initializer(m, "9_input_zero_point").int32_data(0) == 0);
  CHECK(initializer(m, "9_input_clip_min").float_data(0) == 0.0f);
  CHECK(initializer(m, "9_input_clip_max").float_data(0) == static_cast<float>(15.0 * scale));
  CHECK(initializer(m, "9_weight_scale").float_data(0) == 1.0f / 15.0f);
  const std::vector<float> dq =
      learnable::dorefa_quantize_weight(lin->weight().detach(), 4).contiguous().to_vector<float>();
  const auto& wq = initializer(m, "9_weight_quantized");
  CHECK(wq.data_type() == onnx::TensorProto_DataType_INT8);
  REQUIRE(wq.int32_data_size() == static_cast<int>(dq.size()));
  for (std::size_t i = 0; i < dq.size(); ++i) {
    const int q = wq.int32_data(static_cast<int>(i));
    CHECK(std::abs(q) % 2 == 1);  // 2r - 15: odd, no zero level
    CHECK(std::abs(q) <= 15);
    // 2r/15 - 1 in float32 is within an ulp of 1 (2^-23) of the integer over 15.
    CHECK(std::abs(static_cast<float>(q) / 15.0f - dq[i]) <= 0x1p-23f);
  }
}

TEST_CASE("ONNX export: an int32 bias travels as int32 + DequantizeLinear at s_in * s_w",
          "[onnx]") {
  for (
      const char* recipe :
      {R"({"family": "pact", "weight": {"num_bits": 4}, "input": {"num_bits": 4}, "bias": "int32"})",
       R"({"family": "torch_ao", "bias": "int32"})"}) {
    INFO(recipe);
    auto model = qat_model("lenet5bn", recipe);
    const onnx::ModelProto m = deploy::build_onnx_model(*model);  // includes the checker
    auto lin = std::dynamic_pointer_cast<nn::Sequential>(model)->at<quant::QuantLinear>(9);
    const std::vector<float> s = *quant::int32_bias_scale(
        lin->input_quantizer().get(), lin->weight_quantizer().get(), 120, "test", "9");
    const auto& q = initializer(m, "9_bias_quantized");
    CHECK(q.data_type() == onnx::TensorProto_DataType_INT32);
    CHECK(dims(q) == std::vector<std::int64_t>{120});
    const auto& sc = initializer(m, "9_bias_scale");
    REQUIRE(sc.float_data_size() == 120);
    REQUIRE(q.int32_data_size() == 120);
    // The integers and scales give, through DequantizeLinear, the bias the forward added.
    const std::vector<float> fq =
        quant::fake_quantize_int32_bias(lin->bias().detach(), s).to_vector<float>();
    for (int c = 0; c < 120; ++c) {
      CHECK(sc.float_data(c) == s[static_cast<std::size_t>(c)]);
      CHECK(static_cast<float>(q.int32_data(c)) * sc.float_data(c) ==
            fq[static_cast<std::size_t>(c)]);
    }
    bool found = false;
    for (const auto& n : m.graph().node()) {
      if (n.op_type() != "DequantizeLinear" || n.input(0) != "9_bias_quantized") continue;
      found = true;
      CHECK(n.output(0) == "9_bias");
      REQUIRE(n.attribute_size() == 1);
      CHECK(n.attribute(0).name() == "axis");
      CHECK(n.attribute(0).i() == 0);
    }
    CHECK(found);
  }
  // Without the recipe key, the bias stays a float initializer.
  const onnx::ModelProto f =
      deploy::build_onnx_model(*qat_model("lenet5bn", R"({"family": "torch_ao"})"));
  CHECK(initializer(f, "9_bias").data_type() == onnx::TensorProto_DataType_FLOAT);
}

TEST_CASE("ONNX export: unsupported quantizers, bad scales and layers are errors naming the layer",
          "[onnx]") {
  auto pact = qat_model("lenet5bn", R"({"family": "pact"})");
  CHECK_THROWS_WITH(deploy::build_onnx_model(*pact),
                    Catch::Contains("layer '0' (QuantConv2d) weight quantizer") &&
                        Catch::Contains("DoReFaWeightQuantizer) has num_bits 8"));

  auto ao = qat_model("lenet5bn", R"({"family": "torch_ao"})");
  auto qconv = std::dynamic_pointer_cast<nn::Sequential>(ao)->at<quant::QuantConv2d>(0);
  auto& fq = dynamic_cast<quant::FusedMovingAvgObsFakeQuantize&>(*qconv->input_quantizer());
  // The export reads the qparams the fused quantizer's forward chooses from its running min/max
  // (the stored scale can be stale): statistics that give no usable scale are the errors.
  const auto& stats = *fq.activation_post_process();
  for (float bad : {std::nanf(""), -std::numeric_limits<float>::infinity()}) {
    stats.min_val().detach().fill_(bad);
    CHECK_THROWS_WITH(deploy::build_onnx_model(*ao),
                      Catch::Contains("layer '0' (QuantConv2d) input quantizer") &&
                          Catch::Contains("do not make a range"));
  }

  auto dyn = qat_model("lenet5bn", R"({"family": "nvidia", "calibration": {"batches": 0}})");
  CHECK_THROWS_WITH(deploy::build_onnx_model(*dyn), Catch::Contains("no amax"));

  nn::Sequential seq;
  seq.push_back(std::make_shared<nn::Dropout>(0.5, 1));
  seq.push_back(std::make_shared<nn::BatchNorm1d>(nn::BatchNormOptions(4)));
  CHECK_THROWS_WITH(deploy::build_onnx_model(seq),
                    Catch::Contains("layer '1' (BatchNorm1d) has no ONNX mapping"));
}

TEST_CASE("ONNX export: export_onnx writes a checked file atomically; bad paths leave nothing",
          "[onnx]") {
  auto model = nn::make_model("lenet5bn", 1);
  model->eval();
  const std::string path = qgrad_test::binary_dir() + "/test_onnx_export_lenet5bn.onnx";
  std::remove(path.c_str());
  deploy::export_onnx(*model, path);
  onnx::checker::check_model(path);  // throws on a bad file
  std::ifstream in(path, std::ios::binary);
  onnx::ModelProto m;
  REQUIRE(m.ParseFromIstream(&in));
  CHECK(m.graph().node_size() == 12);
  std::remove(path.c_str());

  CHECK_THROWS_WITH(deploy::export_onnx(*model, "/nonexistent-dir/x.onnx"),
                    Catch::Contains("cannot write '/nonexistent-dir/x.onnx'"));
  // A failing export writes nothing: no target, no temporary file.
  nn::Sequential bad;
  bad.push_back(std::make_shared<nn::BatchNorm1d>(nn::BatchNormOptions(4)));
  const std::string bad_path = qgrad_test::binary_dir() + "/test_onnx_export_bad.onnx";
  CHECK_THROWS(deploy::export_onnx(bad, bad_path));
  CHECK(!std::ifstream(bad_path).good());
}
