// `qgrad verify-deploy`: the fake-quant, int8 and ONNX Runtime paths of one checkpoint on the same
// test images, their pairwise agreement, the report and the exit status.
#include "cli/verify_deploy_command.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "cli/command_options.h"
#include "cli/eval_setup.h"
#include "cli/interrupt_guard.h"
#include "cli/interrupted.h"
#include "cli/train_config.h"
#include "cli/training_factory.h"
#include "cli/usage_error.h"
#include "core/autograd/grad_mode.h"
#include "core/error.h"
#include "deploy/int8/convert.h"
#include "deploy/ort/ort_runner.h"
#include "deploy/ort/scratch_dir.h"
#include "nn/data/dataset.h"
#include "quant/modules/frozen_quantizer_statistics.h"
#include "quant/modules/quant_conv2d.h"
#include "quant/modules/quant_linear.h"
#ifdef QGRAD_WITH_ONNX
#include "deploy/onnx/onnx_export.h"
#endif

namespace qgrad::cli {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void append(std::vector<float>& to, const Tensor& t) {
  const std::vector<float> v = t.contiguous().to_vector<float>();
  to.insert(to.end(), v.begin(), v.end());
}

// The fake-quant and int8 paths batch by batch; also gathers the normalised images (for ONNX
// Runtime), their shape and the targets.
void run_qgrad_paths(EvalSetup& s, DeployPath& fake_quant, DeployPath& int8,
                     std::vector<float>& images, std::vector<std::int64_t>& image_shape,
                     std::vector<std::int64_t>& targets) {
  quant::Int8Model int8_model = quant::convert(*s.model);
  NoGradGuard no_grad;
  s.model->eval();
  quant::FrozenQuantizerStatistics frozen(*s.model);
  data::DataLoader loader = eval_test_loader(s);
  bool warm = false;
  while (std::optional<data::Batch> b = loader.next()) {
    if (!warm) {  // builds both models' oneDNN primitives outside the timed region
      s.model->forward(b->data);
      int8_model.forward(b->data);
      warm = true;
      image_shape = b->data.shape();
      image_shape[0] = 0;
    }
    auto start = std::chrono::steady_clock::now();
    const Tensor fq = s.model->forward(b->data);
    fake_quant.seconds += seconds_since(start);
    start = std::chrono::steady_clock::now();
    const Tensor q = int8_model.forward(b->data);
    int8.seconds += seconds_since(start);
    append(fake_quant.logits, fq);
    append(int8.logits, q);
    append(images, b->data);
    const std::vector<std::int64_t> t = b->target.to_vector<std::int64_t>();
    targets.insert(targets.end(), t.begin(), t.end());
    image_shape[0] += b->data.size(0);
  }
  fake_quant.ran = int8.ran = true;
}

// ONNX Runtime on the QDQ export, or the reason it was skipped in ort.skipped.
void run_ort_path(const EvalSetup& s, const std::string& ort_dir, bool optimize,
                  const std::vector<float>& images, const std::vector<std::int64_t>& image_shape,
                  DeployPath& ort) {
#ifdef QGRAD_WITH_ONNX
  const deploy::OrtRunner runner(ort_dir.empty() ? deploy::OrtRunner::default_dir() : ort_dir);
  ort.skipped = runner.unavailable_reason();
  if (!ort.skipped.empty()) return;
  deploy::ScratchDir scratch("qgrad-verify-deploy");
  const std::string onnx = scratch.file("model.onnx");
  try {
    deploy::export_onnx(*s.model, onnx);
  } catch (const ValueError& e) {
    ort.skipped = std::string("the QDQ ONNX export cannot express this model: ") + e.what();
    return;
  }
  deploy::OrtRunOptions o;
  o.batch_size = s.config.eval_batch_size;
  o.threads = compute_threads(s.config);
  o.optimize = optimize;
  deploy::OrtRunResult r = runner.run(onnx, images, image_shape, o);
  ort.name = "ONNX Runtime " + r.version + (o.optimize ? " (QDQ)" : " (QDQ, not optimized)");
  ort.logits = std::move(r.output);
  ort.seconds = r.pass_seconds.at(0);
  ort.ran = true;
#else
  (void)s, (void)ort_dir, (void)optimize, (void)images, (void)image_shape;
  ort.skipped =
      "this qgrad was built without ONNX export (install libonnx-dev and libprotobuf-dev and "
      "configure with -DQGRAD_ONNX=ON)";
#endif
}

std::string fmt(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* format, ...) {
  char buf[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

// Quantized layers whose bias is float: ONNX Runtime's graph optimizations round such a bias onto
// the int32 grid s_in * s_w (int32_bias.h), which training did not.
std::vector<std::string> float_bias_layers(nn::Module& model) {
  std::vector<std::string> names;
  for (const auto& item : model.named_modules()) {
    if (const auto* l = dynamic_cast<const quant::QuantLinear*>(item.value.get())) {
      if (l->bias().defined() && !l->int32_bias()) names.push_back(item.key);
    } else if (const auto* c = dynamic_cast<const quant::QuantConv2d*>(item.value.get())) {
      if (c->bias().defined() && !c->int32_bias()) names.push_back(item.key);
    }
  }
  return names;
}

void print_report(const VerifyDeployOptions& options, const EvalSetup& s,
                  const VerifyDeployResult& r, std::ostream& out) {
  std::ostringstream os;
  const double n = static_cast<double>(std::max<std::int64_t>(r.count, 1));
  os << fmt("%s: %s%s (epoch %lld) on %s, %lld test images, batch %lld, %d threads\n",
            options.checkpoint.c_str(), s.config.model.c_str(), s.quantized.c_str(),
            static_cast<long long>(s.ckpt.epoch), s.config.data.dir.c_str(),
            static_cast<long long>(r.count), static_cast<long long>(s.config.eval_batch_size),
            compute_threads(s.config));
  for (const DeployPath& p : r.paths) {
    if (p.ran)
      os << fmt("  %-28s accuracy %6.2f%% (%lld/%lld)  %9.0f images/s\n", p.name.c_str(),
                100 * p.correct / n, static_cast<long long>(p.correct),
                static_cast<long long>(r.count), r.count / std::max(p.seconds, 1e-9));
    else
      os << "  " << p.name << ": SKIPPED: " << p.skipped << "\n";
  }
  for (const DeployPair& pair : r.pairs) {
    const LogitAgreement& a = pair.agreement;
    os << fmt(
        "  %s vs %s: top-1 agreement %.2f%% (%lld/%lld), accuracy difference %+.2f points, "
        "max logit difference %.4g (%.2f steps)%s\n",
        r.paths[pair.a].name.c_str(), r.paths[pair.b].name.c_str(), 100 * a.agree / n,
        static_cast<long long>(a.agree), static_cast<long long>(a.count),
        100 * (a.correct_b - a.correct_a) / n, a.max_logit_diff,
        a.max_logit_diff / std::max(r.logit_step, 1e-30),
        pair.targets_met ? "" : "  TARGET MISSED");
    if (a.nonfinite_a > 0 || a.nonfinite_b > 0)
      os << fmt(
          "    NaN or infinite logits: %lld of %s, %lld of %s (a diverged model never "
          "meets the target)\n",
          static_cast<long long>(a.nonfinite_a), r.paths[pair.a].name.c_str(),
          static_cast<long long>(a.nonfinite_b), r.paths[pair.b].name.c_str());
  }
  os << fmt("  a step is max|fake-quant logit| / 127 = %.4g (the logits have no quantizer)\n",
            r.logit_step);
  bool ort_missed = false;
  for (const DeployPair& pair : r.pairs) ort_missed |= !pair.targets_met && pair.b == 2;
  const std::vector<std::string> float_bias = float_bias_layers(*s.model);
  if (ort_missed && options.ort_optimize && !float_bias.empty())
    os << "  note: " << float_bias.size() << " quantized layer(s) (" << float_bias.front()
       << (float_bias.size() > 1 ? ", ..." : "")
       << ") have a float bias, which ONNX Runtime's optimizations round onto the int32 grid "
          "s_in * s_w; train with the recipe's \"bias\": \"int32\" to deploy the bias that was "
          "trained, or compare with --ort-optimization disabled\n";
  os << (r.targets_met ? "  verify-deploy: every pair meets the target"
                       : "  verify-deploy: TARGET MISSED")
     << " (top-1 agreement >= 99.9%, accuracies within 0.1 point)\n";
  out << os.str() << std::flush;
}

}  // namespace

VerifyDeployResult run_verify_deploy(const VerifyDeployOptions& options, std::ostream& out) {
  EvalSetup s = load_eval_setup("verify-deploy", options.checkpoint, options.data_dir,
                                options.batch_size, options.threads);
  if (!s.has_recipe)
    throw UsageError("verify-deploy: needs a quantization-aware checkpoint, but " +
                     options.checkpoint +
                     " was trained float (its stored config has no \"quant\" recipe)");
  if (options.images > 0) {
    if (static_cast<std::size_t>(options.images) > s.test_set->size())
      throw UsageError("verify-deploy: --images " + std::to_string(options.images) +
                       " is more than the " + std::to_string(s.test_set->size()) +
                       " test images in " + s.config.data.dir);
    s.test_set = data::Subset::first(s.test_set, static_cast<std::size_t>(options.images));
  }

  VerifyDeployResult r;
  r.paths.resize(3);
  r.paths[0].name = "fake-quant (qgrad)";
  r.paths[1].name = "int8 (qgrad, oneDNN)";
  r.paths[2].name = "ONNX Runtime (QDQ)";
  std::vector<float> images;
  std::vector<std::int64_t> image_shape, targets;
  // Ctrl-C: ONNX Runtime's node, in the same terminal, ends with it; this run stops after the
  // path in progress and leaves through the scratch folders' destructors, so no temporary file
  // (the exported model, the images given to node) stays behind, and exits 130.
  const InterruptGuard guard;
  const auto stop_if_interrupted = [&guard](const std::string& where) {
    if (guard.interrupted())
      throw Interrupted("verify-deploy: interrupted " + where +
                        "; its temporary files are removed");
  };
  run_qgrad_paths(s, r.paths[0], r.paths[1], images, image_shape, targets);
  stop_if_interrupted("after the fake-quant and int8 paths");
  r.count = static_cast<std::int64_t>(targets.size());
  QGRAD_CHECK(r.count > 0, ValueError, "verify-deploy: the test set in ", s.config.data.dir,
              " is empty");
  r.classes = static_cast<std::int64_t>(r.paths[0].logits.size()) / r.count;
  try {
    run_ort_path(s, options.ort_dir, options.ort_optimize, images, image_shape, r.paths[2]);
  } catch (const Error&) {
    stop_if_interrupted("in the ONNX Runtime path");  // node died of the same Ctrl-C
    throw;
  }
  stop_if_interrupted("after the ONNX Runtime path");
  for (const float v : r.paths[0].logits)
    r.logit_step = std::max(r.logit_step, double(std::fabs(v)));
  r.logit_step /= 127;

  r.targets_met = true;
  for (std::size_t i = 0; i < r.paths.size(); ++i) {
    if (!r.paths[i].ran) continue;
    QGRAD_CHECK(r.paths[i].logits.size() == static_cast<std::size_t>(r.count * r.classes),
                ValueError, "verify-deploy: ", r.paths[i].name, " gave ", r.paths[i].logits.size(),
                " logits for ", r.count, " images of ", r.classes, " classes");
    r.paths[i].correct = count_correct_logits(r.paths[i].logits, r.classes, targets);
    for (std::size_t j = 0; j < i; ++j) {
      if (!r.paths[j].ran) continue;
      DeployPair pair;
      pair.a = j;
      pair.b = i;
      pair.agreement = compare_logits(r.paths[j].logits, r.paths[i].logits, r.classes, targets);
      pair.targets_met = deploy_targets_met(pair.agreement);
      r.targets_met = r.targets_met && pair.targets_met;
      r.pairs.push_back(pair);
    }
  }
  print_report(options, s, r, out);
  return r;
}

std::string verify_deploy_usage() {
  return "usage: qgrad verify-deploy --checkpoint FILE [--data-dir DIR] [--images N]\n"
         "                           [--batch-size N] [--threads N] [--onnx-runtime DIR]\n"
         "                           [--ort-optimization all|disabled]\n"
         "\n"
         "Checks that what was trained is what is deployed: runs the test set through the\n"
         "fake-quantized model (as qgrad eval), qgrad's int8 model (as qgrad eval --int8) and\n"
         "ONNX Runtime on the QDQ ONNX export of the same checkpoint (as qgrad export --onnx),\n"
         "and prints each path's accuracy and images/s and, for every pair, the top-1\n"
         "agreement, the accuracy difference and the largest logit difference (also in steps\n"
         "of max|fake-quant logit|/127). Target for every pair: top-1 agreement >= 99.9% and\n"
         "accuracies within 0.1 point. ONNX Runtime runs through node and npm's\n"
         "onnxruntime-node; where they are missing, that path is reported as SKIPPED.\n"
         "\n"
         "  --checkpoint FILE   a quantization-aware .safetensors checkpoint (required)\n"
         "  --data-dir DIR      dataset folder (default: data.dir of the training config)\n"
         "  --images N          only the first N test images, 1 to 1e9 (default: all)\n"
         "  --batch-size N      batch size of every path, 1 to 1e9 (default: eval_batch_size)\n"
         "  --threads N         CPU threads of every path, 1 to 4096 (default: all cores)\n"
         "  --onnx-runtime DIR  folder holding node_modules/onnxruntime-node (default:\n"
         "                      $QGRAD_ORT_DIR, else the build tree's onnxruntime folder)\n"
         "  --ort-optimization all|disabled\n"
         "                      ONNX Runtime's graph optimizations (default all: Q/DQ\n"
         "                      patterns become its fused integer kernels; disabled: the\n"
         "                      graph runs as exported, the fake-quantized computation)\n"
         "\n"
         "exit status: 0 every pair that ran meets the target, 3 a pair misses it, 1 error (a\n"
         "missing or damaged checkpoint or dataset, a model int8 cannot express, ONNX Runtime\n"
         "failing on the export), 2 bad usage, 130 interrupted (Ctrl-C; temporary files are\n"
         "removed)\n";
}

int verify_deploy_command(const std::vector<std::string>& args, std::ostream& out) {
  VerifyDeployOptions o;
  const auto options =
      parse_command_options("verify-deploy", args,
                            {"--checkpoint", "--data-dir", "--images", "--batch-size", "--threads",
                             "--onnx-runtime", "--ort-optimization"});
  if (!options) {
    out << verify_deploy_usage();
    return 0;
  }
  const std::string cmd = "verify-deploy";
  for (const auto& [name, value] : *options) {
    if (name == "--checkpoint") o.checkpoint = value;
    if (name == "--data-dir") o.data_dir = value;
    if (name == "--images") o.images = parse_int_option(cmd, name, value, 1, kMaxBatchSize);
    if (name == "--batch-size") o.batch_size = parse_int_option(cmd, name, value, 1, kMaxBatchSize);
    if (name == "--threads") o.threads = parse_int_option(cmd, name, value, 1, kMaxThreads);
    if (name == "--onnx-runtime") {
      if (value.empty()) throw UsageError("verify-deploy: --onnx-runtime needs a folder");
      o.ort_dir = value;
    }
    if (name == "--ort-optimization") {
      if (value != "all" && value != "disabled")
        throw UsageError("verify-deploy: --ort-optimization must be all or disabled, got '" +
                         value + "'");
      o.ort_optimize = value == "all";
    }
  }
  if (o.checkpoint.empty()) throw UsageError("verify-deploy: --checkpoint FILE is required");
  return run_verify_deploy(o, out).targets_met ? 0 : kTargetMissedStatus;
}

}  // namespace qgrad::cli
