// TrainConfig: everything `qgrad train` does, as read from a JSON config file. Every key is
// optional; the defaults train LeNet-5 with batch norm on Fashion-MNIST with SGD. Parsing
// validates types, ranges and names and rejects unknown keys, throwing UsageError naming the key
// path ("optimizer.lr must be a positive number, got -1"); integer keys have upper bounds (the
// kMax* constants, stated in --help) so that every length computed from them fits in int64, and
// a config file's text goes through parse_json (nesting depth, duplicate keys, 1e400), every
// problem a UsageError naming the file (exit status 2). to_json() writes the resolved config
// (every key, defaults filled in), which parses back to the same TrainConfig; a run stores it in
// its output directory and in its checkpoints so `qgrad eval` and `resume` can rebuild the run.
//
// "quant" holds a quantization-aware training recipe (quant/modules/quant_recipe.h), read once
// into the typed QuantRecipe when parsing, so the run quantizes with the recipe as written: the
// object form of "layers" keeps its specificity order and its check of equally specific rules
// that disagree (an error naming the layer once the model is quantized). JSON is written only at
// the edges, by to_json() through QuantRecipe::to_json() (normalised, every default filled in),
// so the stored config rebuilds exactly the same quantized model. New sections are added as another
// struct member, a parse function called from parse_train_config, a to_json entry and rows in
// train_config_keys().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quant/modules/quant_recipe.h"

namespace qgrad::cli {

struct NormalizeConfig {
  bool enabled = true;  // "normalize": false turns it off
  std::vector<double> mean{0.2860};
  std::vector<double> std{0.3530};
};

struct AugmentConfig {
  std::int64_t random_crop_padding = 0;  // 0 = no random crop
  bool hflip = false;
  // image_folder only: RandomResizedCrop(image_size) for training; false = Resize + CenterCrop
  // as for evaluation.
  bool random_resized_crop = true;
};

// The data: "format" says which loader reads it (cli/dataset_factory.h). mnist (the default):
// the four IDX files in dir; cifar10 / cifar100: the binary files in dir (required); npy: four
// .npy files, relative paths taken from dir (default ".", the current directory); image_folder:
// JPEG / PNG files in one folder per class under dir (required), with train/ and val/ or split
// by val_fraction, decoded, resized and cropped to image_size on the loader's workers.
struct DataConfig {
  std::string format = "mnist";  // mnist | cifar10 | cifar100 | npy | image_folder
  std::string dir = "/usr/share/datasets/fashion-mnist";
  std::string label = "fine";  // cifar100 only: fine | coarse
  // npy only: the arrays, their layout and the number of classes (labels must be below it).
  std::string train_images, train_labels, test_images, test_labels;
  std::string layout = "nchw";  // nchw | nhwc
  std::int64_t num_classes = 10;
  // image_folder only: the model's input size (the crop), the shorter side that evaluation
  // resizes to before its centre crop (default image_size x 256 / 224, rounded), the channels
  // (3 RGB or 1 grey) and the share of each class held out when there is no train/ and val/.
  std::int64_t image_size = 224;
  std::int64_t resize = 256;
  std::int64_t channels = 3;
  double val_fraction = 0.1;
  // Threads preparing batches when they are prepared in the background (decoding images, one is
  // seldom enough).
  std::int64_t workers = 1;
  // Prepare batches on a background thread; unset = only when a core is left over beyond the
  // compute threads (a loader thread on a core the OpenMP threads use stalls every parallel
  // region at its barrier: lenet5bn measured 14k instead of 23k images/s on 2 cores).
  std::optional<bool> prefetch;
  NormalizeConfig normalize;
  AugmentConfig augment;
};

struct OptimizerConfig {
  std::string name = "sgd";  // sgd | adam | adamw
  double lr = 0.05;
  double momentum = 0.9;  // sgd only
  bool nesterov = false;  // sgd only
  double weight_decay = 5e-4;
  double beta1 = 0.9, beta2 = 0.999;  // adam, adamw
  double eps = 1e-8;                  // adam, adamw
};

// The learning-rate schedule, stepped after every batch; lengths are in epochs (converted to
// batches), except warmup_steps.
struct ScheduleConfig {
  std::string name = "constant";  // constant | step | multistep | cosine
  std::int64_t warmup_epochs = 0;
  std::int64_t warmup_steps = 0;         // batches; exclusive with warmup_epochs
  double warmup_start_factor = 0.1;      // lr starts at base lr * this, rises linearly to base lr
  std::int64_t step_size = 1;            // step: epochs between decays
  std::vector<std::int64_t> milestones;  // multistep: epochs (from the start) of the decays
  double gamma = 0.1;                    // step, multistep: decay factor
  double eta_min = 0.0;                  // cosine: final lr
};

struct OutputConfig {
  std::string dir;                    // empty: runs/<model>-<timestamp> (or the resumed run's)
  std::int64_t checkpoint_every = 0;  // also keep epoch_<N>.safetensors every N epochs; 0 = off
  std::string progress = "auto";      // auto | bar | lines | off
  double log_interval_s = 10.0;       // seconds between progress lines when not a terminal
};

// Data-parallel training (`mpirun -np N qgrad train`; docs/distributed.md). Ignored by one
// process.
struct DistributedConfig {
  double bucket_mb = 1.0;         // gradient bucket size: smaller starts all-reduces earlier
  bool sync_batchnorm = false;    // batch norm with the global batch's statistics
  bool broadcast_buffers = true;  // rank 0's buffers (batch norm's running statistics) each step
  std::string backend = "mpi";    // GPU tensors: "mpi" (staged through host memory) or "nccl"
};

// Upper bounds of the integer keys (stated in --help): far beyond any real run, and small enough
// that epochs x batches and every schedule length computed from them fit in int64.
constexpr std::int64_t kMaxEpochs = 100000;
constexpr std::int64_t kMaxBatchSize = 1000000000;
constexpr std::int64_t kMaxWarmupSteps = 1000000000;
constexpr std::int64_t kMaxThreads = 4096;
constexpr std::int64_t kMaxCropPadding = 1024;
constexpr std::int64_t kMaxClasses = 100000;
constexpr std::int64_t kMaxImageSize = 4096;
constexpr std::int64_t kMaxWorkers = 256;

struct TrainConfig {
  // The zoo model's name, or for an imported model the ONNX file's stem ("resnet18").
  std::string model = "lenet5bn";
  // "model": {"onnx": FILE}: the float model imported from this ONNX file (deploy::import_onnx,
  // its weights the initialisation, the seed unused for it); empty: the zoo's `model`.
  std::string onnx;
  std::int64_t epochs = 3;
  std::int64_t batch_size = 128;
  std::int64_t eval_batch_size = 1000;
  std::int64_t seed = 0;
  std::string device = "cpu";
  std::int64_t threads = 0;  // 0 = every core
  // Only bitwise-reproducible GPU algorithms (set_deterministic_algorithms); see docs/design.md.
  bool deterministic = false;
  DataConfig data;
  OptimizerConfig optimizer;
  ScheduleConfig schedule;
  double grad_clip = 0.0;  // max total gradient norm; 0 = off
  double label_smoothing = 0.0;
  // What a non-finite (nan/inf) training loss does: "stop" (an error naming the epoch and step,
  // exit status 1) or "continue" (train on; such epochs never become best.safetensors).
  std::string nonfinite_loss = "stop";
  OutputConfig output;
  DistributedConfig distributed;
  std::string resume;  // checkpoint to continue from; empty = start fresh
  // Safetensors file (a qgrad checkpoint or a plain state dict) whose weights initialise the
  // float model before quantization; empty = the seed's initialisation. Ignored when resuming.
  std::string pretrained;
  // The QAT recipe; nullopt = float training.
  std::optional<quant::QuantRecipe> quant;
};

// The model names `train` accepts (those of the model zoo, nn/models/zoo.h).
std::vector<std::string> model_names();

// Parses and validates a config object; throws UsageError naming the offending key.
TrainConfig parse_train_config(const nlohmann::json& json);
// Parses the JSON text of a config file; `source` names it in errors ("config 'a.json'"). Any
// problem with the text (invalid JSON, nesting deeper than 64, a duplicate key, a number beyond
// double's range) or a value is a UsageError starting with `source`.
TrainConfig parse_train_config_text(const std::string& text, const std::string& source);
// Reads a JSON file (IOError when unreadable or over 16 MiB, UsageError when not valid JSON or a
// value is bad, naming the file) and parses it.
TrainConfig load_train_config(const std::string& path);
// The resolved config, every key present (threads, output.dir, resume, pretrained, quant and
// grad_clip as null when unset).
nlohmann::json to_json(const TrainConfig& config);

// One documented key of the config: dotted path, default (as text) and meaning.
struct ConfigKeyDoc {
  std::string path;
  std::string fallback;
  std::string meaning;
};
const std::vector<ConfigKeyDoc>& train_config_keys();
// The table of train_config_keys() formatted for --help.
std::string train_config_help();

}  // namespace qgrad::cli
