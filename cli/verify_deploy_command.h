// `qgrad verify-deploy --checkpoint F [--data-dir D] [--images N] [--batch-size N] [--threads N]
// [--onnx-runtime DIR]`: checks that what was trained is what is deployed. It runs the test set
// (or its first N images) through three paths of one quantization-aware checkpoint: the
// fake-quantized model as `qgrad eval` runs it (eval mode, quantizer statistics frozen), qgrad's
// int8 model (quant::convert on oneDNN) and ONNX Runtime (node + onnxruntime-node, OrtRunner) on
// the QDQ ONNX export of the same model (written to a scratch folder), all fed the same
// normalised images. It prints each path's accuracy and images/s, and for every pair the top-1
// agreement, the accuracy difference and the largest logit difference, in steps of
// max|fake-quant logit| / 127 (the logits have no quantizer of their own). A pair meets the
// target when its top-1 agreement is >= 99.9% and its accuracies are within 0.1 point. ONNX
// Runtime missing (no node, no package, a qgrad without ONNX export) or a model the ONNX
// exporter cannot express: that path is reported as skipped with the reason and left out of the
// pairs. Exit status: 0 every pair that ran meets the target, 3 one misses it, 1 an error, 2 bad
// usage.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "cli/logit_agreement.h"

namespace qgrad::cli {

inline constexpr int kTargetMissedStatus = 3;

struct VerifyDeployOptions {
  std::string checkpoint;
  std::string data_dir;         // empty: the data.dir of the training config
  std::int64_t images = 0;      // 0: the whole test set
  std::int64_t batch_size = 0;  // 0: the eval_batch_size of the training config
  std::int64_t threads = 0;     // 0: every core
  std::string ort_dir;          // empty: OrtRunner::default_dir()
  bool ort_optimize = true;     // false: ONNX Runtime runs the graph as exported
};

struct DeployPath {
  std::string name;
  bool ran = false;
  std::string skipped;  // why not, when !ran
  std::vector<float> logits;
  std::int64_t correct = 0;
  double seconds = 0;  // forward time over every image (after an untimed warm-up batch)
};

struct DeployPair {
  std::size_t a = 0, b = 0;  // indices into VerifyDeployResult::paths
  LogitAgreement agreement;
  bool targets_met = false;
};

struct VerifyDeployResult {
  std::int64_t count = 0, classes = 0;
  double logit_step = 0;          // max|fake-quant logit| / 127
  std::vector<DeployPath> paths;  // fake-quant, int8, ONNX Runtime
  std::vector<DeployPair> pairs;  // every pair of paths that ran
  bool targets_met = false;       // every pair's
};

// Runs the three paths and prints the report to `out`. A float checkpoint is a UsageError; a
// model int8 cannot express is a ValueError naming the layer.
VerifyDeployResult run_verify_deploy(const VerifyDeployOptions& options, std::ostream& out);

// The command line; returns the exit status. Usage errors throw UsageError.
int verify_deploy_command(const std::vector<std::string>& args, std::ostream& out);
std::string verify_deploy_usage();

}  // namespace qgrad::cli
