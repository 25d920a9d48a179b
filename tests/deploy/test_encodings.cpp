// AIMET encodings export (deploy/encodings): for lenet5bn quantized by the aimet, torch_ao,
// nvidia, lsq and horizon recipes, the written file parses, has exactly the keys of AIMET's 1.0.0
// and 0.6.1 layouts, names only tensors of the model's ONNX export (float form; QDQ form too for
// the families it exports), one entry per channel for per-channel weights, and scales / offsets
// recomputed here from each quantizer's own parameters; resnet20's doubly quantized block inputs
// get a tensor each; FP8, block and narrow-range quantizers are errors naming the layer; an
// unwritable path leaves nothing behind.
#include <onnx/onnx_pb.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "deploy/encodings/model_encodings.h"
#include "deploy/onnx/onnx_export.h"
#include "deploy/test_models.h"
#include "nn/models/zoo.h"
#include "nn/modules/sequential.h"
#include "quant/modules/aimet_quantizer.h"
#include "quant/modules/calibrate.h"
#include "quant/modules/fused_fake_quantize.h"
#include "quant/modules/horizon_fake_quantize.h"
#include "quant/modules/learnable_fake_quantize.h"
#include "quant/modules/quant_conv2d.h"
#include "quant/modules/quant_linear.h"
#include "quant/modules/quant_recipe.h"
#include "quant/modules/quantize_model.h"
#include "quant/modules/tensor_quantizer.h"
#include "support/test_paths.h"

using namespace qgrad;
using nlohmann::json;

namespace {

// Quantized by `recipe`, calibrated on one batch when the recipe calibrates (else one observed
// training-mode batch), in eval mode.
std::shared_ptr<nn::UnaryModule> calibrated(const std::string& name, const std::string& recipe) {
  auto model = nn::make_model(name, 1);
  qgrad_test::randomise_bn(*model);
  const quant::QuantRecipe r = quant::QuantRecipe::parse(recipe);
  quant::quantize_model(*model, r);
  Generator gen(3);
  const Tensor x = randn({8, 1, 28, 28}, gen);
  NoGradGuard no_grad;
  if (r.calibration_batches() > 0)
    quant::calibrate_model(
        *model, 1, [&](std::int64_t) { model->forward(x); }, r.calibration_options());
  else
    model->forward(x);
  model->eval();
  return model;
}

std::set<std::string> keys(const json& j) {
  std::set<std::string> k;
  for (const auto& item : j.items()) k.insert(item.key());
  return k;
}

// Names of the graph's input, initializers and node outputs.
std::set<std::string> tensor_names(const onnx::ModelProto& m) {
  std::set<std::string> names;
  for (const auto& i : m.graph().input()) names.insert(i.name());
  for (const auto& t : m.graph().initializer()) names.insert(t.name());
  for (const auto& n : m.graph().node())
    for (const auto& o : n.output()) names.insert(o);
  return names;
}

json written(const nn::Module& model, aimet::EncodingFileVersion v) {
  const std::string path = qgrad_test::binary_dir() + "/test_encodings.encodings";
  std::remove(path.c_str());
  deploy::export_encodings(model, path, v);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::remove(path.c_str());
  return json::parse(ss.str());  // throws on a malformed file
}

// The expected (scale, file offset, bitwidth, symmetric) of one quantizer, recomputed from its
// own parameters as its family quantizes.
struct Expected {
  std::vector<float> scale;
  std::vector<std::int64_t> offset;
  int bw = 0;
  bool sym = false;
};

int bits_of(std::int64_t qmin, std::int64_t qmax) {
  return static_cast<int>(std::lround(std::log2(static_cast<double>(qmax - qmin + 1))));
}

Expected expected_of(const nn::UnaryModule& q) {
  Expected e;
  std::int64_t qmin = 0, qmax = 0;
  std::vector<std::int64_t> zp;
  if (const auto* a = dynamic_cast<const quant::AimetQuantizeDequantize*>(&q)) {
    const auto mn = a->min().detach().contiguous().to_vector<float>();
    const auto mx = a->max().detach().contiguous().to_vector<float>();
    const float levels = static_cast<float>((1LL << a->bitwidth()) - 1);
    for (std::size_t i = 0; i < mn.size(); ++i) {
      const float s = (mx[i] - mn[i]) / levels;
      e.scale.push_back(s);
      e.offset.push_back(a->symmetric() ? -(1LL << (a->bitwidth() - 1))
                                        : static_cast<std::int64_t>(std::nearbyint(mn[i] / s)));
    }
    e.bw = a->bitwidth();
    e.sym = a->symmetric();
    return e;
  }
  if (const auto* f = dynamic_cast<const quant::FusedMovingAvgObsFakeQuantize*>(&q)) {
    e.scale = f->scale().to_vector<float>();
    zp = f->zero_point().to_vector<std::int64_t>();
    qmin = f->quant_min();
    qmax = f->quant_max();
  } else if (const auto* t = dynamic_cast<const quant::TensorQuantizer*>(&q)) {
    const auto& d = t->descriptor();
    const double max_bound = std::pow(2.0, d.num_bits().bits() - 1 + d.is_unsigned()) - 1;
    for (double a : t->amax().to_vector<double>()) {
      e.scale.push_back(static_cast<float>(a / max_bound));
      zp.push_back(0);
    }
    qmin = d.is_unsigned() ? 0 : -static_cast<std::int64_t>(max_bound) - 1;
    qmax = static_cast<std::int64_t>(max_bound);
  } else if (const auto* l = dynamic_cast<const quant::LearnableFakeQuantize*>(&q)) {
    e.scale = l->scale().detach().to_vector<float>();
    qmin = l->quant_min();
    qmax = l->quant_max();
    const bool symmetric = l->extra_repr().find("symmetric") != std::string::npos;
    for (float z : l->zero_point().detach().to_vector<float>()) {
      const double r = symmetric ? 0.0 : std::nearbyint(z);
      zp.push_back(static_cast<std::int64_t>(
          std::min<double>(std::max<double>(r, static_cast<double>(qmin)), double(qmax))));
    }
  } else if (const auto* h = dynamic_cast<const quant::HorizonFakeQuantize*>(&q)) {
    e.scale = h->scale().to_vector<float>();
    zp.assign(e.scale.size(), 0);
    qmin = h->quant_range().quant_min;
    qmax = h->quant_range().quant_max;
  } else {
    FAIL("unexpected quantizer " << q.name());
  }
  e.bw = bits_of(qmin, qmax);
  e.sym = true;
  for (std::int64_t z : zp) {
    e.offset.push_back(qmin - z);
    e.sym = e.sym && qmin - z == -(1LL << (e.bw - 1));
  }
  return e;
}

// Every quantized layer of a Sequential: (weight name, weight quantizer, input name, input
// quantizer) are checked against the file by the ONNX names of the layer's inputs.
void check_values(const nn::UnaryModule& model, const json& v1, const onnx::ModelProto& m) {
  std::map<std::string, json> acts, params;
  for (const json& e : v1["activation_encodings"]) acts[e["name"]] = e;
  for (const json& e : v1["param_encodings"]) params[e["name"]] = e;
  // The input of each Conv / Gemm node in the float form is the quantized activation.
  std::vector<std::string> layer_inputs;
  for (const auto& n : m.graph().node())
    if (n.op_type() == "Conv" || n.op_type() == "Gemm") layer_inputs.push_back(n.input(0));
  std::size_t layer = 0;
  for (const auto& item : model.named_children()) {
    std::shared_ptr<nn::UnaryModule> wq, iq;
    std::int64_t out_channels = 0;
    if (auto c = std::dynamic_pointer_cast<quant::QuantConv2d>(item.value)) {
      wq = c->weight_quantizer();
      iq = c->input_quantizer();
      out_channels = c->weight().size(0);
    } else if (auto l = std::dynamic_pointer_cast<quant::QuantLinear>(item.value)) {
      wq = l->weight_quantizer();
      iq = l->input_quantizer();
      out_channels = l->weight().size(0);
    } else {
      continue;
    }
    INFO("layer " << item.key);
    const json& w = params.at(item.key + "_weight");
    const json& a = acts.at(layer_inputs.at(layer++));
    for (const auto& [q, e] : {std::pair{wq, w}, std::pair{iq, a}}) {
      const Expected x = expected_of(*q);
      CHECK(e["bw"] == x.bw);
      CHECK(e["is_sym"] == x.sym);
      REQUIRE(e["scale"].size() == x.scale.size());
      for (std::size_t i = 0; i < x.scale.size(); ++i) {
        CHECK(e["scale"][i].get<double>() == static_cast<double>(x.scale[i]));
        CHECK(e["offset"][i].get<std::int64_t>() == x.offset[i]);
      }
    }
    CHECK(w["enc_type"] == (w["scale"].size() > 1 ? "PER_CHANNEL" : "PER_TENSOR"));
    if (w["enc_type"] == "PER_CHANNEL") CHECK(w["scale"].size() == std::size_t(out_channels));
  }
  CHECK(layer == 5);
}

}  // namespace

TEST_CASE("AIMET encodings: every integer family's lenet5bn, both layouts, names and values",
          "[encodings]") {
  struct Case {
    const char* recipe;
    bool qdq;  // the QDQ exporter takes this family too
    bool per_channel_weights;
  };
  for (
      const Case& c :
      {Case{R"({"family": "aimet"})", false, true},
       Case{
           R"({"family": "aimet", "weight": {"bitwidth": 4, "symmetric": true, "per_channel": false},
                                "input": {"bitwidth": 16, "symmetric": false}})",
           false, false},
       Case{R"({"family": "torch_ao"})", true, true}, Case{R"({"family": "nvidia"})", true, true},
       Case{R"({"family": "nvidia", "weight": {"num_bits": 4, "axis": 0},
                                "input": {"num_bits": 4}})",
            true, true},
       Case{R"({"family": "lsq"})", false, false},
       Case{R"({"family": "lsq", "weight": {"num_bits": 4, "signed": true,
                                "per_channel": true}})",
            false, true},
       Case{R"({"family": "horizon"})", false, true}}) {
    INFO(c.recipe);
    auto model = calibrated("lenet5bn", c.recipe);
    deploy::OnnxExportOptions float_form;
    float_form.qdq = false;
    const onnx::ModelProto fm = deploy::build_onnx_model(*model, float_form);
    const std::set<std::string> float_names = tensor_names(fm);
    std::set<std::string> initializers;
    for (const auto& t : fm.graph().initializer()) initializers.insert(t.name());

    const json v1 = written(*model, aimet::EncodingFileVersion::V1_0_0);
    CHECK(keys(v1) == std::set<std::string>{"version", "activation_encodings", "param_encodings"});
    CHECK(v1["version"] == "1.0.0");
    REQUIRE(v1["activation_encodings"].is_array());
    REQUIRE(v1["param_encodings"].is_array());
    CHECK(v1["activation_encodings"].size() == 5);  // the inputs of 2 convs and 3 linears
    CHECK(v1["param_encodings"].size() == 5);
    const std::set<std::string> entry_keys{"name",   "enc_type", "dtype", "bw",
                                           "is_sym", "scale",    "offset"};
    std::size_t per_channel = 0;
    for (const char* kind : {"activation_encodings", "param_encodings"}) {
      for (const json& e : v1[kind]) {
        CHECK(keys(e) == entry_keys);
        CHECK(e["dtype"] == "INT");
        CHECK(e["scale"].size() == e["offset"].size());
        CHECK(float_names.count(e["name"].get<std::string>()) == 1);
        if (std::string(kind) == "param_encodings")
          CHECK(initializers.count(e["name"].get<std::string>()) == 1);
        per_channel += e["enc_type"] == "PER_CHANNEL";
      }
    }
    CHECK((per_channel == 5) == c.per_channel_weights);
    check_values(*model, v1, fm);
    if (c.qdq) {
      // The QDQ form has the same names: activations as node outputs or the input, weights
      // as the DequantizeLinear outputs.
      const std::set<std::string> qdq_names = tensor_names(deploy::build_onnx_model(*model));
      for (const char* kind : {"activation_encodings", "param_encodings"})
        for (const json& e : v1[kind]) CHECK(qdq_names.count(e["name"].get<std::string>()) == 1);
    }

    // 0.6.1: the same encodings keyed by name, one dict per channel.
    const json v0 = written(*model, aimet::EncodingFileVersion::V0_6_1);
    CHECK(keys(v0) == std::set<std::string>{"version", "activation_encodings", "param_encodings"});
    CHECK(v0["version"] == "0.6.1");
    const std::set<std::string> legacy_keys{"bitwidth", "dtype",  "is_symmetric", "max",
                                            "min",      "offset", "scale"};
    for (const char* kind : {"activation_encodings", "param_encodings"}) {
      REQUIRE(v0[kind].is_object());
      CHECK(v0[kind].size() == v1[kind].size());
      for (const json& e1 : v1[kind]) {
        const json& list = v0[kind].at(e1["name"].get<std::string>());
        REQUIRE(list.size() == e1["scale"].size());
        for (std::size_t i = 0; i < list.size(); ++i) {
          CHECK(keys(list[i]) == legacy_keys);
          CHECK(list[i]["dtype"] == "int");
          CHECK(list[i]["bitwidth"] == e1["bw"]);
          CHECK(list[i]["is_symmetric"] == (e1["is_sym"].get<bool>() ? "True" : "False"));
          CHECK(list[i]["scale"] == e1["scale"][i]);
          CHECK(list[i]["offset"] == e1["offset"][i]);
          // min / max: the represented range offset * scale .. (offset + 2^bw - 1) * scale.
          const double s = list[i]["scale"].get<double>();
          const double o = list[i]["offset"].get<double>();
          const double levels = std::pow(2.0, e1["bw"].get<double>()) - 1;
          CHECK(list[i]["min"].get<double>() == Approx(o * s).epsilon(1e-6).margin(1e-30));
          CHECK(list[i]["max"].get<double>() ==
                Approx((o + levels) * s).epsilon(1e-6).margin(1e-30));
        }
      }
    }
  }
}

TEST_CASE("AIMET encodings: resnet20 gives each quantizer of a shared block input its own tensor",
          "[encodings]") {
  auto model = calibrated("resnet20", R"({"family": "torch_ao", "fuse_bn": true})");
  const deploy::ModelEncodings e = deploy::model_encodings(*model);
  CHECK(e.activations.size() == 21 + 1 + 18);  // conv and fc inputs, two per residual add
  std::set<std::string> names;
  for (const auto& a : e.activations) names.insert(a.name);
  CHECK(names.size() == e.activations.size());  // no tensor carries two encodings
  CHECK(e.params.size() == 21 + 1);
}

TEST_CASE("AIMET encodings: quantizers without a 2^b integer grid are errors naming the layer",
          "[encodings]") {
  auto fp8 = calibrated("lenet5bn", R"({"family": "nvidia", "weight": {"num_bits": [4, 3],
                                       "axis": 0}})");
  CHECK_THROWS_WITH(deploy::model_encodings(*fp8),
                    Catch::Contains("AIMET encodings export") &&
                        Catch::Contains("layer '0' (QuantConv2d) weight quantizer") &&
                        Catch::Contains("float format"));
  auto block =
      calibrated("lenet5bn",
                 R"({"family": "nvidia", "weight": {"num_bits": 4, "block_sizes": {"-1": 16,
          "type": "dynamic"}}})");
  CHECK_THROWS_WITH(deploy::model_encodings(*block),
                    Catch::Contains("layer '0' (QuantConv2d) weight quantizer") &&
                        Catch::Contains("block quantization"));
  auto narrow = calibrated("lenet5bn", R"({"family": "nvidia", "input": {"num_bits": 8,
                                          "narrow_range": true}})");
  CHECK_THROWS_WITH(deploy::model_encodings(*narrow),
                    Catch::Contains("layer '0' (QuantConv2d) input quantizer") &&
                        Catch::Contains("255 levels, not a power of two"));
  auto uncalibrated = nn::make_model("lenet5bn", 1);  // quantized, never calibrated
  quant::quantize_model(*uncalibrated, json{{"family", "aimet"}});
  CHECK_THROWS_WITH(
      deploy::model_encodings(*uncalibrated),
      Catch::Contains("layer '0' (QuantConv2d)") && Catch::Contains("range was never set"));
  auto float_model = nn::make_model("lenet5bn", 1);
  float_model->eval();
  const deploy::ModelEncodings none = deploy::model_encodings(*float_model);
  CHECK(none.activations.empty());
  CHECK(none.params.empty());
}

TEST_CASE("AIMET encodings: an unwritable path or a failing export leaves no file", "[encodings]") {
  auto model = calibrated("lenet5bn", R"({"family": "torch_ao"})");
  CHECK_THROWS_WITH(deploy::export_encodings(*model, "/nonexistent-dir/m.encodings"),
                    Catch::Contains("/nonexistent-dir/m.encodings"));
  const std::filesystem::path dir =
      std::filesystem::path(qgrad_test::binary_dir()) / "test_encodings_failing";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto fp8 = calibrated("lenet5bn", R"({"family": "nvidia", "input": {"num_bits": [4, 3]}})");
  CHECK_THROWS(deploy::export_encodings(*fp8, (dir / "m.encodings").string()));
  CHECK(std::filesystem::is_empty(dir));  // no target, no temporary
  std::filesystem::remove_all(dir);
}
