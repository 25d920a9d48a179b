// `qgrad export --encodings / --quantizers` and `qgrad eval --quantizers` on a short torch.ao QAT
// run over a small synthetic dataset: the encodings file parses and names tensors of the float
// ONNX export written alongside; eval with the exported quantizer state gives the checkpoint's
// own loss and accuracy; a float checkpoint is a usage error; an unwritable output leaves no
// file (not even the outputs that could have been written). Built with ONNX only (--encodings
// needs it).
#ifdef QGRAD_WITH_ONNX
#include <onnx/onnx_pb.h>

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "cli/eval_command.h"
#include "cli/export_command.h"
#include "cli/train_command.h"
#include "cli/train_config.h"
#include "cli/usage_error.h"
#include "cli_test_helpers.h"
#include "core/error.h"

using namespace qgrad;
using namespace qgrad::cli;
using nlohmann::json;
using qgrad_cli_test::TempDir;
using qgrad_cli_test::train_tiny;

TEST_CASE("export --encodings --quantizers, and eval --quantizers restores the same results",
          "[cli]") {
  TempDir tmp;
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data"), 128, 100);
  const std::string ckpt = train_tiny(tmp, "ao", json{{"family", "torch_ao"}});
  std::ostringstream out;
  REQUIRE(export_command({"--checkpoint", ckpt, "--onnx", tmp.file("m.onnx"), "--onnx-form",
                          "float", "--encodings", tmp.file("m.encodings"), "--encodings-version",
                          "0.6.1", "--quantizers", tmp.file("q.json")},
                         out) == 0);
  INFO(out.str());
  std::ifstream in(tmp.file("m.onnx"), std::ios::binary);
  onnx::ModelProto m;
  REQUIRE(m.ParseFromIstream(&in));
  std::set<std::string> names{"input"};
  for (const auto& t : m.graph().initializer()) names.insert(t.name());
  for (const auto& n : m.graph().node()) names.insert(n.output(0));
  const json enc = json::parse(qgrad_cli_test::slurp(tmp.file("m.encodings")));
  CHECK(enc["version"] == "0.6.1");
  CHECK(enc["param_encodings"].size() == 5);
  CHECK(enc["activation_encodings"].size() == 5);
  for (const char* kind : {"param_encodings", "activation_encodings"})
    for (const auto& item : enc[kind].items()) CHECK(names.count(item.key()) == 1);
  CHECK(enc["param_encodings"]["0_weight"].size() == 6);  // per channel

  EvalOptions eo;
  eo.checkpoint = ckpt;
  eo.threads = 2;
  std::ostringstream plain_out, restored_out;
  const EvalResult plain = run_eval(eo, plain_out);
  eo.quantizers = tmp.file("q.json");
  const EvalResult restored = run_eval(eo, restored_out);
  CHECK(restored_out.str().find("10 quantizers from") != std::string::npos);
  CHECK(restored.correct == plain.correct);
  CHECK(restored.loss == plain.loss);

  // A state file with fake quantization switched off changes the result: the file is applied.
  // (Its scales alone would not do: the fused observers recompute them on every batch.)
  json q = json::parse(qgrad_cli_test::slurp(tmp.file("q.json")));
  for (auto& [name, entry] : q["quantizers"].items())
    for (auto& v : entry["state"]["fake_quant_enabled"]["values"]) v = 0;
  qgrad_cli_test::write_text(tmp.file("q4.json"), q.dump());
  eo.quantizers = tmp.file("q4.json");
  std::ostringstream scaled_out;
  CHECK(run_eval(eo, scaled_out).loss != plain.loss);
}

TEST_CASE("export --encodings: float checkpoints and unwritable paths", "[cli]") {
  TempDir tmp;
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data"), 64, 32);
  const std::string float_ckpt = train_tiny(tmp, "float", json());
  std::ostringstream out;
  CHECK_THROWS_AS(export_command({"--checkpoint", float_ckpt, "--encodings", tmp.file("e")}, out),
                  UsageError);
  const std::string ckpt = train_tiny(tmp, "ao", json{{"family", "torch_ao"}});
  std::filesystem::create_directories(tmp.file("out"));
  // The encodings could be written but the quantizers' folder does not exist: neither is.
  CHECK_THROWS_WITH(export_command({"--checkpoint", ckpt, "--encodings", tmp.file("out/e.json"),
                                    "--quantizers", tmp.file("out/no/q.json")},
                                   out),
                    Catch::Contains("out/no/q.json"));
  CHECK(std::filesystem::is_empty(tmp.file("out")));
  // An unsupported quantizer fails before anything is written.
  const std::string fp8 = train_tiny(tmp, "fp8",
                                     json{{"family", "nvidia"},
                                          {"input", {{"num_bits", {4, 3}}}},
                                          {"calibration", {{"batches", 1}}}});
  std::filesystem::remove_all(tmp.file("out"));
  std::filesystem::create_directories(tmp.file("out"));
  CHECK_THROWS_WITH(export_command({"--checkpoint", fp8, "--quantizers", tmp.file("out/q.json"),
                                    "--encodings", tmp.file("out/e.json")},
                                   out),
                    Catch::Contains("layer '0' (QuantConv2d) input quantizer"));
  CHECK(std::filesystem::is_empty(tmp.file("out")));
}

TEST_CASE("export: an output that is the checkpoint, a FIFO or a device is refused first",
          "[cli]") {
  TempDir tmp;
  const std::string ckpt = tmp.file("model.safetensors");
  const std::string text = "never read: the output paths are checked first";
  qgrad_cli_test::write_text(ckpt, text);
  REQUIRE(::mkfifo(tmp.file("fifo").c_str(), 0600) == 0);
  std::filesystem::create_symlink(ckpt, tmp.file("link.onnx"));
  std::ostringstream out;
  // It overwrote the checkpoint with ONNX, and replaced a FIFO or /dev/null with a regular file.
  CHECK_THROWS_AS(export_command({"--checkpoint", ckpt, "--onnx", ckpt}, out), UsageError);
  CHECK_THROWS_WITH(export_command({"--checkpoint", ckpt, "--onnx", ckpt}, out),
                    Catch::Contains("export: --onnx '" + ckpt + "' is the checkpoint itself"));
  CHECK_THROWS_WITH(export_command({"--checkpoint", ckpt, "--onnx", tmp.file("link.onnx")}, out),
                    Catch::Contains("is the checkpoint itself"));
  CHECK_THROWS_WITH(export_command({"--checkpoint", ckpt, "--quantizers", tmp.file("fifo")}, out),
                    Catch::Contains("is a device, FIFO or socket, not a regular file"));
  CHECK_THROWS_WITH(export_command({"--checkpoint", ckpt, "--encodings", "/dev/null"}, out),
                    Catch::Contains("export: --encodings '/dev/null' is a device, FIFO or socket"));
  CHECK_THROWS_WITH(export_command({"--checkpoint", ckpt, "--onnx", tmp.path()}, out),
                    Catch::Contains("is a folder, not a regular file"));
  // A path that cannot be written (a file where its folder should be) fails first too.
  CHECK_THROWS_AS(export_command({"--checkpoint", ckpt, "--onnx", ckpt + "/sub/m.onnx"}, out),
                  IOError);
  CHECK_THROWS_WITH(
      export_command({"--checkpoint", ckpt, "--onnx", ckpt + "/sub/m.onnx"}, out),
      Catch::Contains("export: --onnx '" + ckpt + "/sub/m.onnx' cannot be written: '" + ckpt +
                      "' is not a folder"));
  CHECK(std::filesystem::is_fifo(tmp.file("fifo")));
  CHECK(std::filesystem::is_character_file("/dev/null"));
  std::ifstream in(ckpt);
  std::string back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(back == text);
}

#endif  // QGRAD_WITH_ONNX
