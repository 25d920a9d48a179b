// OrtRunner: the inputs to a scratch folder, node run_onnx_batches.js, the outputs and the
// script's JSON report back.
#include "deploy/ort/ort_runner.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "core/error.h"
#include "core/file_io.h"
#include "core/json_parse.h"
#include "core/subprocess.h"
#include "deploy/ort/scratch_dir.h"

namespace qgrad::deploy {

namespace {

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s;
  for (std::int64_t d : shape) s += (s.empty() ? "" : ",") + std::to_string(d);
  return s;
}

bool is_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

}  // namespace

OrtRunner::OrtRunner(std::string ort_dir, std::string script)
    : dir_(std::move(ort_dir)), script_(std::move(script)) {}

std::string OrtRunner::default_dir() {
  const char* env = std::getenv("QGRAD_ORT_DIR");
  if (env != nullptr && *env != '\0') return env;
  return QGRAD_ORT_DEFAULT_DIR;
}

std::string OrtRunner::default_script() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path installed =
        exe.parent_path().parent_path() / "share/qgrad/run_onnx_batches.js";
    if (is_file(installed.string())) return installed.string();
  }
  return QGRAD_ORT_SCRIPT_SOURCE;
}

std::string OrtRunner::unavailable_reason() const {
  const SubprocessResult node = run_subprocess({"node", "--version"});
  if (node.status != 0)
    return "node is not installed or does not run (apt-get install nodejs npm): " +
           node.output.substr(0, node.output.find('\n'));
  if (!is_file(dir_ + "/node_modules/onnxruntime-node/package.json"))
    return "onnxruntime-node is not installed in " + dir_ +
           " (cd DIR && npm install --ignore-scripts onnxruntime-node@1.30.0, then pass "
           "--onnx-runtime DIR or set QGRAD_ORT_DIR; ctest installs it into build/onnxruntime)";
  if (!is_file(script_)) return "the ONNX Runtime script " + script_ + " is missing";
  return "";
}

OrtRunResult OrtRunner::run(const std::string& onnx_path, const std::vector<float>& input,
                            const std::vector<std::int64_t>& shape,
                            const OrtRunOptions& options) const {
  std::int64_t numel = 1;
  for (std::int64_t d : shape) numel *= d;
  QGRAD_CHECK(!shape.empty() && numel == static_cast<std::int64_t>(input.size()), ValueError,
              "OrtRunner: ", input.size(), " input values for shape [", shape_text(shape), "]");
  ScratchDir scratch("qgrad-ort");
  const std::string in = scratch.file("input.f32"), out = scratch.file("output.f32");
  write_file_atomic(
      in, std::string(reinterpret_cast<const char*>(input.data()), input.size() * sizeof(float)));
  const SubprocessResult r =
      run_subprocess({"node", script_, dir_, onnx_path, in, shape_text(shape),
                      std::to_string(options.batch_size), std::to_string(options.threads), out,
                      std::to_string(options.passes), options.optimize ? "all" : "disabled"});
  QGRAD_CHECK(r.status == 0, IOError, "ONNX Runtime (node ", script_, ") failed on ", onnx_path,
              " with exit status ", r.status, ": ", r.output);
  const std::string last_line = r.output.substr(
      r.output.find_last_of('\n', r.output.size() >= 2 ? r.output.size() - 2 : 0) + 1);
  const nlohmann::json report = parse_json(last_line, "the report of " + script_);
  OrtRunResult result;
  try {
    result.dims = report.at("dims").get<std::vector<std::int64_t>>();
    result.pass_seconds = report.at("seconds").get<std::vector<double>>();
    result.peak_rss_mib = report.at("max_rss_kib").get<double>() / 1024.0;
    result.version = report.at("version").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw IOError("the report of " + script_ + " lacks a field (" + e.what() + "): " + last_line);
  }
  std::int64_t out_numel = 1;
  for (std::int64_t d : result.dims) out_numel *= d;
  const std::string bytes = read_file(out, "ONNX Runtime output");
  QGRAD_CHECK(!result.dims.empty() && result.dims[0] == shape[0] &&
                  bytes.size() == static_cast<std::size_t>(out_numel) * sizeof(float),
              IOError, "ONNX Runtime output of ", onnx_path, ": ", bytes.size(),
              " bytes for dims [", shape_text(result.dims), "] and ", shape[0], " inputs");
  result.output.resize(static_cast<std::size_t>(out_numel));
  std::memcpy(result.output.data(), bytes.data(), bytes.size());
  return result;
}

}  // namespace qgrad::deploy
