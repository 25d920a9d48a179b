// A model imported from ONNX through the command line: a train config with "model": {"onnx":
// FILE} trains the imported ResNet-20 (residual adds) on a small synthetic dataset and stores the
// config, so ptq, a QAT epoch from it, export, eval --int8 and verify-deploy (fake-quant vs int8;
// ONNX Runtime in the hidden [.ort] case) run as for a zoo model; the weights of qgrad import go
// through ptq with --model FILE.onnx. A file that cannot take the data's images, a missing or
// misspelt key and a missing file are errors naming them.
#ifdef QGRAD_WITH_ONNX

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command_dispatch.h"
#include "cli/train_config.h"
#include "cli/usage_error.h"
#include "cli/verify_deploy_command.h"
#include "cli_test_helpers.h"
#include "nn/serialize/checkpoint.h"
#include "support/fixtures.h"

using namespace qgrad;
using namespace qgrad::cli;
using nlohmann::json;
using qgrad_cli_test::CommandRun;
using qgrad_cli_test::run_qgrad;
using qgrad_cli_test::TempDir;

namespace {

std::string onnx_fixture(const std::string& file) {
  return qgrad_test::fixture_path("onnx_import", file);
}

// The imported ResNet-20 trained float, then one QAT epoch from it (torch.ao); returns the QAT
// checkpoint. The fixture's random weights have no batch norm (the export folded it), so the
// learning rate is low and the gradient clipped.
std::string qat_resnet20(const TempDir& tmp) {
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data"), 128, 64);
  const json model{{"onnx", onnx_fixture("resnet20.onnx")}};
  json c{{"model", model},
         {"epochs", 1},
         {"batch_size", 32},
         {"eval_batch_size", 64},
         {"threads", 2},
         {"grad_clip", 1.0},
         {"optimizer", {{"lr", 0.01}}},
         {"data", {{"dir", tmp.file("data")}}},
         {"output", {{"progress", "off"}, {"dir", tmp.file("float")}}}};
  for (const char* run : {"float", "qat"}) {
    const std::string config = tmp.file(std::string(run) + ".json");
    qgrad_cli_test::write_text(config, c.dump());
    const CommandRun r = run_qgrad({"train", "--config", config});
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    const json stored =
        json::parse(qgrad_cli_test::slurp(tmp.file(std::string(run) + "/config.json")));
    CHECK(stored["model"] == model);
    c["pretrained"] = tmp.file("float/last.safetensors");
    c["quant"] = {{"family", "torch_ao"}};
    c["output"]["dir"] = tmp.file("qat");
  }
  return tmp.file("qat/last.safetensors");
}

}  // namespace

TEST_CASE("onnx model: an imported ResNet-20 trains, quantizes, exports and deploys", "[cli]") {
  TempDir tmp;
  const std::string qat = qat_resnet20(tmp);
  // PTQ of the float checkpoint, and of qgrad import's weights with --model FILE.onnx.
  const CommandRun ptq = run_qgrad({"ptq", "--checkpoint", tmp.file("float/last.safetensors"),
                                    "--recipe", "torch_ao_default", "--calibration-batches", "1",
                                    "--threads", "2", "--out", tmp.file("ptq.safetensors")});
  INFO(ptq.out << ptq.err);
  CHECK(ptq.status == 0);
  const std::string onnx = onnx_fixture("resnet20.onnx");
  REQUIRE(run_qgrad({"import", "--onnx", onnx, "--out", tmp.file("w.safetensors")}).status == 0);
  const CommandRun ptq2 = run_qgrad({"ptq", "--checkpoint", tmp.file("w.safetensors"), "--model",
                                     onnx, "--data-dir", tmp.file("data"), "--calibration-batches",
                                     "1", "--threads", "2", "--out", tmp.file("ptq2.safetensors")});
  INFO(ptq2.out << ptq2.err);
  CHECK(ptq2.status == 0);
  CHECK(
      run_qgrad({"eval", "--checkpoint", tmp.file("ptq2.safetensors"), "--threads", "2"}).status ==
      0);
  // Export (QDQ and float forms), int8 evaluation, verify-deploy without ONNX Runtime.
  const CommandRun exp = run_qgrad({"export", "--checkpoint", qat, "--onnx", tmp.file("qdq.onnx")});
  INFO(exp.out << exp.err);
  CHECK(exp.status == 0);
  CHECK(std::filesystem::file_size(tmp.file("qdq.onnx")) > 0);
  CHECK(run_qgrad({"export", "--checkpoint", qat, "--onnx", tmp.file("float.onnx"), "--onnx-form",
                   "float"})
            .status == 0);
  const CommandRun eval = run_qgrad({"eval", "--checkpoint", qat, "--int8", "--threads", "2"});
  INFO(eval.out << eval.err);
  CHECK(eval.status == 0);
  CHECK(eval.out.find("int8 graph") == std::string::npos);  // the steps are listed, not the graph
  VerifyDeployOptions o;
  o.checkpoint = qat;
  o.threads = 2;
  o.ort_dir = tmp.file("no-ort");
  std::ostringstream out;
  const VerifyDeployResult r = run_verify_deploy(o, out);
  INFO(out.str());
  CHECK(r.paths[0].ran);
  CHECK(r.paths[1].ran);
  REQUIRE(r.pairs.size() == 1);
  CHECK(r.count == 64);
  CHECK(r.pairs[0].agreement.agree >= 63);  // measured: 64 of 64
  // One epoch of 4 steps leaves this model near chance on the data, so the logits are compared
  // too (measured 1.71 steps of max|logit| / 127).
  CHECK(r.pairs[0].agreement.max_logit_diff < 4 * r.logit_step);
}

TEST_CASE("onnx model: verify-deploy of an imported model with ONNX Runtime", "[.ort]") {
  const char* ort_dir = std::getenv("QGRAD_ORT_DIR");
  if (ort_dir == nullptr) FAIL("QGRAD_ORT_DIR is not set: run this case through install_ort.sh");
  TempDir tmp;
  VerifyDeployOptions o;
  o.checkpoint = qat_resnet20(tmp);
  o.threads = 2;
  o.ort_dir = ort_dir;
  std::ostringstream out;
  const VerifyDeployResult r = run_verify_deploy(o, out);
  INFO(out.str());
  REQUIRE(r.paths.size() == 3);
  for (const DeployPath& p : r.paths) CHECK(p.ran);
  for (const DeployPair& pair : r.pairs) {
    INFO(r.paths[pair.a].name << " vs " << r.paths[pair.b].name);
    CHECK(pair.agreement.agree >= 63);                        // measured: 64 of 64
    CHECK(pair.agreement.max_logit_diff < 4 * r.logit_step);  // measured: up to 1.71 steps
  }
}

TEST_CASE("onnx model: bad model keys and files that do not fit the data are errors", "[cli]") {
  TempDir tmp;
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data"), 64, 64);
  auto train_error = [&](const json& model) {
    const json c{{"model", model},
                 {"epochs", 1},
                 {"threads", 2},
                 {"data", {{"dir", tmp.file("data")}}},
                 {"output", {{"progress", "off"}, {"dir", tmp.file("run")}}}};
    qgrad_cli_test::write_text(tmp.file("c.json"), c.dump());
    const CommandRun r = run_qgrad({"train", "--config", tmp.file("c.json")});
    INFO(r.out << r.err);
    CHECK(r.status != 0);
    CHECK_FALSE(std::filesystem::exists(tmp.file("run")));
    return r.err;
  };
  const std::string mnv2 = onnx_fixture("mobilenet_v2_w025.onnx");
  CHECK_THAT(train_error({{"onnx", mnv2}}),
             Catch::Contains("model: '" + mnv2 + "' cannot take the data's 1x28x28 images"));
  CHECK_THAT(train_error({{"onnx", tmp.file("none.onnx")}}), Catch::Contains("none.onnx"));
  CHECK_THAT(train_error(json::object()), Catch::Contains("model.onnx is required"));
  CHECK_THAT(train_error({{"onnx", mnv2}, {"file", "x"}}), Catch::Contains("model.file"));
  CHECK_THAT(train_error({{"onnx", 3}}), Catch::Contains("model.onnx"));
  // The stored form round-trips: to_json writes the object back.
  const TrainConfig c = parse_train_config(json{{"model", {{"onnx", "dir/net.onnx"}}}});
  CHECK(c.model == "net");
  CHECK(c.onnx == "dir/net.onnx");
  CHECK(to_json(c)["model"] == json{{"onnx", "dir/net.onnx"}});
}

#endif  // QGRAD_WITH_ONNX
