// `qgrad eval`: argument parsing, model reconstruction from the checkpoint's config (quantized
// with the stored recipe for a QAT checkpoint), and the test-set pass.
#include "cli/eval_command.h"

#include <cstdio>
#include <optional>
#include <ostream>
#include <sstream>

#include "cli/command_options.h"
#include "cli/device_option.h"
#include "cli/eval_setup.h"
#include "cli/train_config.h"
#include "cli/training_factory.h"
#include "cli/usage_error.h"
#include "deploy/float_inference/compile_inference.h"
#include "deploy/int8/convert.h"
#include "quant/modules/quantizer_state_file.h"

namespace qgrad::cli {

namespace {

EvalSetup load_for_eval(const EvalOptions& options) {
  EvalSetup s = load_eval_setup("eval", options.checkpoint, options.data_dir, options.batch_size,
                                options.threads);
  if (!options.quantizers.empty()) {
    if (!s.has_recipe)
      throw UsageError("eval: --quantizers needs a quantization-aware checkpoint, but " +
                       options.checkpoint +
                       " was trained float (its stored config has no \"quant\" recipe)");
    const std::size_t n = quant::load_quantizer_state(*s.model, options.quantizers);
    s.quantized += " (" + std::to_string(n) + " quantizers from " + options.quantizers + ")";
  }
  return s;
}

data::DataLoader test_loader(const EvalSetup& s) {
  return eval_test_loader(s);
}

}  // namespace

EvalResult run_eval(const EvalOptions& options, std::ostream& out) {
  const Device device = parse_device("eval: --device", options.device);
  EvalSetup s = load_for_eval(options);
  require_runs_on("eval: --device " + options.device, device, *s.model);
  if (!device.is_cpu()) s.model->to(device);
  data::DataLoader loader = test_loader(s);
  // A float model on the CPU runs compiled for inference unless --no-fuse; a model the compiler
  // cannot map runs its module forward, saying why.
  std::optional<deploy::FloatInferenceModel> compiled;
  std::string path = options.fuse ? "" : ", module forward (--no-fuse)";
  if (options.fuse && !s.has_recipe && device.is_cpu()) {
    try {
      s.model->eval();
      compiled = deploy::compile_inference(*s.model);
      path = ", compiled (batch norm folded, fused)";
    } catch (const ValueError& e) {
      out << "eval: running the module forward: " << e.what() << "\n";
    }
  }
  EvalResult r =
      compiled ? evaluate_forward([&](const Tensor& x) { return compiled->forward(x); }, loader)
               : evaluate(*s.model, loader, device);
  char line[768];
  std::snprintf(line, sizeof line,
                "%s%s (epoch %lld) on %s: test loss %.4f, test accuracy %.2f%% (%lld/%lld), %.1f "
                "s%s\n",
                s.config.model.c_str(), s.quantized.c_str(), static_cast<long long>(s.ckpt.epoch),
                (s.config.data.dir + (device.is_cpu() ? "" : ", " + device.str())).c_str(), r.loss,
                100 * r.accuracy, static_cast<long long>(r.correct),
                static_cast<long long>(r.count), r.time_s, s.has_recipe ? "" : path.c_str());
  out << options.checkpoint << ": " << line << std::flush;
  return r;
}

Int8Comparison run_eval_int8(const EvalOptions& options, std::ostream& out) {
  EvalSetup s = load_for_eval(options);
  if (!s.has_recipe)
    throw UsageError("eval: --int8 needs a quantization-aware checkpoint, but " +
                     options.checkpoint +
                     " was trained float (its stored config has no \"quant\" recipe); train "
                     "with a recipe (see qgrad recipes) or leave out --int8");
  quant::Int8Model int8 = quant::convert(*s.model);
  data::DataLoader loader = test_loader(s);
  const Int8Comparison r = compare_int8(*s.model, int8, loader);
  const double n = static_cast<double>(std::max<std::int64_t>(r.count, 1));
  char buf[512];
  std::ostringstream os;
  std::snprintf(buf, sizeof buf, "%s: %s%s (epoch %lld) on %s, batch %lld, %d threads\n",
                options.checkpoint.c_str(), s.config.model.c_str(), s.quantized.c_str(),
                static_cast<long long>(s.ckpt.epoch), s.config.data.dir.c_str(),
                static_cast<long long>(s.config.eval_batch_size), compute_threads(s.config));
  os << buf;
  std::snprintf(buf, sizeof buf, "  %-11s accuracy %6.2f%% (%lld/%lld)  %9.0f images/s\n",
                "fake-quant", 100 * r.fake_quant_correct / n,
                static_cast<long long>(r.fake_quant_correct), static_cast<long long>(r.count),
                r.count / std::max(r.fake_quant_time_s, 1e-9));
  os << buf;
  std::snprintf(buf, sizeof buf, "  %-11s accuracy %6.2f%% (%lld/%lld)  %9.0f images/s\n", "int8",
                100 * r.int8_correct / n, static_cast<long long>(r.int8_correct),
                static_cast<long long>(r.count), r.count / std::max(r.int8_time_s, 1e-9));
  os << buf;
  std::snprintf(buf, sizeof buf,
                "  top-1 agreement %.2f%% (%lld/%lld), max logit difference %.4g (%.2f steps of "
                "max|logit|/127 = %.4g)\n",
                100 * r.agree / n, static_cast<long long>(r.agree), static_cast<long long>(r.count),
                r.max_logit_diff, r.max_logit_diff / std::max(r.max_abs_logit / 127, 1e-30),
                r.max_abs_logit / 127);
  os << buf;
  if (r.nonfinite_fake_quant > 0 || r.nonfinite_int8 > 0)
    os << "  NaN or infinite logits: " << r.nonfinite_fake_quant << " of fake-quant, "
       << r.nonfinite_int8 << " of int8 (the agreement above means nothing for a diverged model)\n";
  os << "  implementations (oneDNN's, or qgrad's direct convolution):\n";
  for (const quant::Int8LayerInfo& info : int8.implementations())
    os << "    " << info.layer << ": " << info.impl << "\n";
  out << os.str() << std::flush;
  return r;
}

std::string eval_usage() {
  return "usage: qgrad eval --checkpoint FILE [--data-dir DIR] [--batch-size N] [--threads N] "
         "[--int8]\n"
         "                  [--quantizers Q.json] [--device D] [--no-fuse]\n"
         "\n"
         "Evaluates a checkpoint written by qgrad train on the test split and prints the test\n"
         "loss and accuracy. The model and normalisation come from the config stored in the\n"
         "checkpoint; a quantization-aware checkpoint is rebuilt with its recipe and evaluated\n"
         "fake-quantized, with the quantization parameters training left. A float checkpoint\n"
         "runs compiled for inference on the CPU (batch norm folded into the convolutions,\n"
         "activations and residual adds fused; the logits agree with the module's to 1e-5 of\n"
         "the largest), or its module forward where a layer has no compiled form.\n"
         "\n"
         "  --checkpoint FILE  a .safetensors checkpoint (last, best or epoch_N) (required)\n"
         "  --data-dir DIR     dataset folder (default: data.dir of the training config)\n"
         "  --batch-size N     evaluation batch size, 1 to 1e9 (default: eval_batch_size, 1000)\n"
         "  --threads N        CPU threads, 1 to 4096 (default: all cores)\n"
         "  --int8             also convert the QAT model to int8 (oneDNN) and print fake-quant\n"
         "                     and int8 accuracy, images/s, their top-1 agreement and the oneDNN\n"
         "                     implementations (a quantization-aware checkpoint only)\n"
         "  --quantizers Q.json  quantizer state written by qgrad export --quantizers, applied\n"
         "                     after the checkpoint's (same recipe: same quantizers and settings)\n"
         "  --device D         cpu, cuda or cuda:N: where the model is evaluated (default cpu;\n"
         "                     a QAT checkpoint's quantizers must run there, or it is refused\n"
         "                     naming them; not with --int8, which runs on oneDNN)\n"
         "  --no-fuse          a float checkpoint runs its module forward (the reference path)\n"
         "\n"
         "exit status: 0 done, 1 error (a missing or damaged checkpoint or dataset), 2 bad usage\n";
}

int eval_command(const std::vector<std::string>& args, std::ostream& out) {
  EvalOptions o;
  const auto options = parse_command_options(
      "eval", args,
      {"--checkpoint", "--data-dir", "--batch-size", "--threads", "--quantizers", "--device"},
      nullptr, {"--int8", "--no-fuse"});
  if (!options) {
    out << eval_usage();
    return 0;
  }
  for (const auto& [name, value] : *options) {
    if (name == "--checkpoint") o.checkpoint = value;
    if (name == "--data-dir") o.data_dir = value;
    if (name == "--batch-size")
      o.batch_size = parse_int_option("eval", name, value, 1, kMaxBatchSize);
    if (name == "--threads") o.threads = parse_int_option("eval", name, value, 1, kMaxThreads);
    if (name == "--int8") o.int8 = true;
    if (name == "--no-fuse") o.fuse = false;
    if (name == "--quantizers") o.quantizers = value;
    if (name == "--device") {
      parse_device("eval: --device", value);  // a bad name is a usage error before any work
      o.device = value;
    }
  }
  if (o.checkpoint.empty()) throw UsageError("eval: --checkpoint FILE is required");
  if (o.int8 && o.device != "cpu")
    throw UsageError("eval: --int8 runs on the CPU (oneDNN's int8 kernels); leave out --device " +
                     o.device);
  if (o.int8)
    run_eval_int8(o, out);
  else
    run_eval(o, out);
  return 0;
}

}  // namespace qgrad::cli
