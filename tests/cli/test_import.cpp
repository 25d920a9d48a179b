// qgrad import (cli/import_command.h): an ONNX export of lenet5bn becomes a safetensors file
// with the imported model's state dict and the ONNX path in its metadata; a missing file, a
// file that is not ONNX, a truncated one and an unsupported operator exit 1 and leave the output
// as it was; an output equal to the input or a missing option exits 2.
#ifdef QGRAD_WITH_ONNX

#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command_dispatch.h"
#include "cli_test_helpers.h"
#include "core/file_io.h"
#include "deploy/onnx/onnx_import.h"
#include "nn/serialize/safetensors.h"
#include "support/fixtures.h"

using qgrad_cli_test::CommandRun;
using qgrad_cli_test::run_qgrad;
using qgrad_cli_test::TempDir;

namespace {

std::string onnx_fixture(const std::string& file) {
  return qgrad_test::fixture_path("onnx_import", file);
}

}  // namespace

TEST_CASE("import --onnx --out writes the imported weights", "[cli][import]") {
  TempDir tmp;
  const std::string onnx = onnx_fixture("lenet5bn.onnx"), out = tmp.file("w.safetensors");
  const CommandRun r = run_qgrad({"import", "--onnx", onnx, "--out", out});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("tensors written to " + out) != std::string::npos);
  const auto file = qgrad::serialize::load_safetensors(out);
  CHECK(file.metadata.at("onnx") == onnx);
  const qgrad::TensorDict want = qgrad::deploy::import_onnx(onnx)->state_dict();
  qgrad_cli_test::require_same_tensors(file.tensors, want, "imported weights");
}

TEST_CASE("import refuses bad input and leaves the output alone", "[cli][import]") {
  TempDir tmp;
  const std::string out = tmp.file("w.safetensors");
  qgrad_cli_test::write_text(out, "old");
  qgrad_cli_test::write_text(tmp.file("text.onnx"), "not a model\n");
  const std::string bytes = qgrad::read_file(onnx_fixture("resnet20.onnx"), "test");
  qgrad_cli_test::write_text(tmp.file("half.onnx"), bytes.substr(0, bytes.size() / 3));
  struct Case {
    std::string onnx, message;
  };
  for (const Case& c :
       {Case{tmp.file("none.onnx"), "none.onnx"}, Case{tmp.file("text.onnx"), "not an ONNX model"},
        Case{tmp.file("half.onnx"), "not an ONNX model"},
        Case{onnx_fixture("sigmoid.onnx"), "operator 'Sigmoid' is not supported"}}) {
    const CommandRun r = run_qgrad({"import", "--onnx", c.onnx, "--out", out});
    INFO(c.onnx << ": " << r.err);
    CHECK(r.status == 1);
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(qgrad_cli_test::slurp(out) == "old");
  }
  const CommandRun same = run_qgrad({"import", "--onnx", out, "--out", out});
  INFO(same.err);
  CHECK(same.status == 2);
  CHECK(qgrad_cli_test::slurp(out) == "old");
  CHECK(run_qgrad({"import", "--onnx", onnx_fixture("lenet5bn.onnx")}).status == 2);
  CHECK(run_qgrad({"import", "--out", out}).status == 2);
  CHECK(run_qgrad({"help", "import"}).out.find("--onnx MODEL.onnx") != std::string::npos);
}

#endif  // QGRAD_WITH_ONNX
