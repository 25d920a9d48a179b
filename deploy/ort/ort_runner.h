// OrtRunner: runs an ONNX file in ONNX Runtime from C++ without linking it, through node and npm's
// onnxruntime-node (its CPU build ships inside the package), which is how this project gets a
// real ONNX Runtime on Debian (no python3-onnxruntime there). run() writes the inputs as raw
// float32 into a scratch folder, runs deploy/ort/run_onnx_batches.js (one session, batch by
// batch, an untimed warm-up batch, then timed passes) and reads the outputs back with the
// runtime's timing and peak memory. unavailable_reason() says why ONNX Runtime cannot run here
// (no node on PATH, no onnxruntime-node in the folder, no script), so callers can report a skip
// instead of failing; a run that starts and then fails is an IOError with node's message.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qgrad::deploy {

struct OrtRunOptions {
  std::int64_t batch_size = 256;
  int threads = 1;  // ONNX Runtime's intra-op threads (inter-op: 1, sequential execution)
  int passes = 1;   // timed passes over all inputs; the outputs are those of the last
  // ONNX Runtime's graph optimizations (on: Q/DQ patterns become its fused integer kernels; off:
  // the graph runs as exported).
  bool optimize = true;
};

struct OrtRunResult {
  std::vector<float> output;         // row-major, rows in input order
  std::vector<std::int64_t> dims;    // [N, ...]
  std::vector<double> pass_seconds;  // session.run time of each timed pass
  double peak_rss_mib = 0;           // of the node process, runtime and node itself included
  std::string version;               // onnxruntime-node's
};

class OrtRunner {
 public:
  // ort_dir holds node_modules/onnxruntime-node; script is run_onnx_batches.js.
  explicit OrtRunner(std::string ort_dir, std::string script = default_script());

  // $QGRAD_ORT_DIR, else the build tree's onnxruntime folder (where ctest installs it).
  static std::string default_dir();
  // run_onnx_batches.js next to an installed qgrad (share/qgrad), else in the source tree.
  static std::string default_script();

  // Empty when node, the package and the script are found; else a sentence saying what is missing
  // and how to install it.
  std::string unavailable_reason() const;

  // Runs `onnx_path` on input [shape] (float32, row-major). IOError when node fails.
  OrtRunResult run(const std::string& onnx_path, const std::vector<float>& input,
                   const std::vector<std::int64_t>& shape, const OrtRunOptions& options) const;

  const std::string& dir() const { return dir_; }

 private:
  std::string dir_, script_;
};

}  // namespace qgrad::deploy
