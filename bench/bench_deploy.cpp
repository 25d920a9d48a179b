// Deploy throughput, the qgrad half of bench_deploy.py (which runs ONNX Runtime and PyTorch 1.13
// beside it and prints the table). Two modes:
//   bench_deploy prepare --checkpoint F --out DIR [--data-dir D]
//     writes what every path reads, from a quantization-aware checkpoint of `qgrad train`: the
//     normalised test images (DIR/input.f32, raw float32 [N,1,28,28]) and labels (labels.i64),
//     the QDQ ONNX export (qdq.onnx), the float model (the checkpoint's weights without its
//     quantizers) as ONNX (float.onnx, batch norm folded) and as a state dict (float.safetensors,
//     for the PyTorch twin); every file written to a temporary name and renamed.
//   bench_deploy run --checkpoint F --path int8|fp32|fp32-fused --input DIR [--batch 256]
//                    [--threads 2] [--passes 2]
//     times qgrad's int8 model (quant::convert), the float model's module forward (fp32) or the
//     float model compiled for inference (fp32-fused: deploy::compile_inference, batch norms
//     folded and activations fused) over DIR/input.f32 in batches: one untimed warm-up batch, then
//     `passes` timed passes (forward only). Prints one line: <path> <images/s of the best pass>
//     <correct> <count> <peak RSS MiB (VmHWM)>.
// Built with the library (and qgrad_onnx for prepare): build/bench/bench_deploy.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/eval_setup.h"
#include "cli/qat_setup.h"
#include "cli/stored_config.h"
#include "cli/training_factory.h"
#include "core/autograd/grad_mode.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/file_io.h"
#include "deploy/float_inference/compile_inference.h"
#include "deploy/int8/convert.h"
#include "nn/serialize/checkpoint.h"
#include "nn/serialize/safetensors.h"
#include "quant/modules/lazy_buffer.h"
#ifdef QGRAD_WITH_ONNX
#include "deploy/onnx/onnx_export.h"
#endif
#include "bench/peak_rss.h"

using namespace qgrad;

namespace {

template <typename T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

template <typename T>
std::vector<T> read_raw(const std::string& path) {
  const std::string bytes = read_file(path, "bench_deploy");
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

// The checkpoint's float weights in the unquantized model of its config.
std::shared_ptr<nn::UnaryModule> float_model(const std::string& checkpoint) {
  const serialize::Checkpoint ckpt = serialize::load_checkpoint(checkpoint);
  const cli::TrainConfig config = cli::stored_train_config(ckpt, "bench_deploy", checkpoint);
  std::shared_ptr<nn::UnaryModule> model = cli::build_model(config);
  const nn::LoadStateDictResult r = model->load_state_dict(ckpt.model, /*strict=*/false);
  QGRAD_CHECK(r.missing_keys.empty(), ValueError, "bench_deploy: ", checkpoint, " lacks ",
              r.missing_keys.front(), " of the float ", config.model);
  model->eval();
  return model;
}

int prepare(const std::string& checkpoint, const std::string& out, const std::string& data_dir) {
#ifdef QGRAD_WITH_ONNX
  cli::EvalSetup s = cli::load_eval_setup("bench_deploy", checkpoint, data_dir, 1000, 0);
  QGRAD_CHECK(s.has_recipe, ValueError, "bench_deploy: ", checkpoint,
              " is not a quantization-aware checkpoint");
  std::vector<float> images;
  std::vector<std::int64_t> labels;
  data::DataLoader loader = cli::eval_test_loader(s);
  while (std::optional<data::Batch> b = loader.next()) {
    const std::vector<float> x = b->data.contiguous().to_vector<float>();
    const std::vector<std::int64_t> t = b->target.to_vector<std::int64_t>();
    images.insert(images.end(), x.begin(), x.end());
    labels.insert(labels.end(), t.begin(), t.end());
  }
  write_file_atomic(out + "/input.f32", bytes_of(images));
  write_file_atomic(out + "/labels.i64", bytes_of(labels));
  s.model->eval();
  deploy::export_onnx(*s.model, out + "/qdq.onnx");
  std::shared_ptr<nn::UnaryModule> fp32 = float_model(checkpoint);
  deploy::export_onnx(*fp32, out + "/float.onnx");
  serialize::save_safetensors(out + "/float.safetensors", fp32->state_dict());
  std::printf("%s %zu images\n", s.config.model.c_str(), labels.size());
  return 0;
#else
  (void)checkpoint, (void)out, (void)data_dir;
  std::fprintf(stderr, "bench_deploy prepare: this qgrad was built without ONNX export\n");
  return 1;
#endif
}

int run(const std::string& checkpoint, const std::string& path, const std::string& input,
        std::int64_t batch, int threads, int passes) {
  omp_set_num_threads(threads);
  const std::vector<float> images = read_raw<float>(input + "/input.f32");
  const std::vector<std::int64_t> labels = read_raw<std::int64_t>(input + "/labels.i64");
  const auto n = static_cast<std::int64_t>(labels.size());
  QGRAD_CHECK(n > 0 && images.size() == static_cast<std::size_t>(n) * 784, ValueError,
              "bench_deploy: ", input, " holds ", images.size(), " values for ", n, " labels");
  const Tensor all = from_vector<float>(images, {n, 1, 28, 28});
  std::function<Tensor(const Tensor&)> forward;
  std::shared_ptr<nn::UnaryModule> model;
  std::unique_ptr<quant::Int8Model> int8;
  std::unique_ptr<deploy::FloatInferenceModel> fused;
  if (path == "int8") {
    const serialize::Checkpoint ckpt = serialize::load_checkpoint(checkpoint);
    const cli::TrainConfig config = cli::stored_train_config(ckpt, "bench_deploy", checkpoint);
    std::shared_ptr<nn::UnaryModule> qat = cli::build_model(config);
    QGRAD_CHECK(config.quant.has_value(), ValueError, "bench_deploy: ", checkpoint,
                " is not a quantization-aware checkpoint");
    cli::quantize_for_training(*qat, *config.quant);
    quant::load_quant_state_dict(*qat, ckpt.model, /*strict=*/true);
    int8 = std::make_unique<quant::Int8Model>(quant::convert(*qat));
    forward = [&](const Tensor& x) { return int8->forward(x); };
  } else if (path == "fp32") {
    model = float_model(checkpoint);
    forward = [&](const Tensor& x) { return model->forward(x); };
  } else if (path == "fp32-fused") {
    fused = std::make_unique<deploy::FloatInferenceModel>(
        deploy::compile_inference(*float_model(checkpoint)));
    forward = [&](const Tensor& x) { return fused->forward(x); };
  } else {
    std::fprintf(stderr, "bench_deploy run: --path must be int8, fp32 or fp32-fused, got '%s'\n",
                 path.c_str());
    return 2;
  }
  NoGradGuard no_grad;
  forward(all.narrow(0, 0, std::min(batch, n)));  // warm-up: oneDNN primitives, first touch
  double best = 1e30;
  std::int64_t correct = 0;
  for (int p = 0; p < passes; ++p) {
    double seconds = 0;
    correct = 0;
    for (std::int64_t start = 0; start < n; start += batch) {
      const Tensor x = all.narrow(0, start, std::min(batch, n - start)).contiguous();
      const auto t0 = std::chrono::steady_clock::now();
      const Tensor y = forward(x);
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const std::vector<float> logits = y.contiguous().to_vector<float>();
      const std::int64_t classes = y.size(1);
      for (std::int64_t i = 0; i < x.size(0); ++i) {
        const float* row = logits.data() + i * classes;
        correct += std::max_element(row, row + classes) - row == labels[start + i];
      }
    }
    best = std::min(best, seconds);
  }
  std::printf("%s %.1f %lld %lld %.1f\n", path.c_str(), n / best, static_cast<long long>(correct),
              static_cast<long long>(n), qgrad_bench::peak_rss_mib());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "usage: bench_deploy prepare --checkpoint F --out DIR [--data-dir D]\n"
      "       bench_deploy run --checkpoint F --path int8|fp32|fp32-fused --input DIR\n"
      "                        [--batch 256] [--threads 2] [--passes 2]\n";
  if (argc < 2 || argc % 2 != 0) {
    std::fputs(usage, stderr);
    return 2;
  }
  const std::string mode = argv[1];
  std::map<std::string, std::string> opt{{"--batch", "256"}, {"--threads", "2"}, {"--passes", "2"}};
  for (int i = 2; i + 1 < argc; i += 2) opt[argv[i]] = argv[i + 1];
  try {
    if (mode == "prepare" && opt.count("--checkpoint") && opt.count("--out"))
      return prepare(opt["--checkpoint"], opt["--out"], opt["--data-dir"]);
    if (mode == "run" && opt.count("--checkpoint") && opt.count("--path") && opt.count("--input"))
      return run(opt["--checkpoint"], opt["--path"], opt["--input"], std::stoll(opt["--batch"]),
                 std::stoi(opt["--threads"]), std::stoi(opt["--passes"]));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_deploy %s: error: %s\n", mode.c_str(), e.what());
    return 1;
  }
  std::fputs(usage, stderr);
  return 2;
}
