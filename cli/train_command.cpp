// The training loop of `qgrad train`, its checkpoints and resume.
#include "cli/train_command.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <vector>

#include "cli/command_options.h"
#include "cli/config_difference.h"
#include "cli/config_reader.h"
#include "cli/dataset_factory.h"
#include "cli/device_option.h"
#include "cli/evaluate.h"
#include "cli/interrupt_guard.h"
#include "cli/pretrained.h"
#include "cli/progress_bar.h"
#include "cli/ptq_command.h"
#include "cli/qat_setup.h"
#include "cli/step_stats.h"
#include "cli/stored_config.h"
#include "cli/summary_table.h"
#include "cli/training_factory.h"
#include "cli/usage_error.h"
#include "core/autograd/grad_mode.h"
#include "core/deterministic.h"
#include "core/device.h"
#include "core/factory.h"
#include "core/file_io.h"
#include "core/version.h"
#include "distributed/convert_sync_batchnorm.h"
#include "distributed/data_parallel.h"
#include "distributed/init.h"
#include "nn/data/batch_uploader.h"
#include "nn/data/mnist.h"
#include "nn/modules/dropout.h"
#include "nn/serialize/checkpoint.h"
#include "nn/utils/clip_grad.h"
#include "ops/loss/loss.h"
#include "quant/modules/lazy_buffer.h"
#include "quant/modules/quantize_model.h"
#include "quant/modules/quantizer_device.h"
#include "quant/modules/synchronize_statistics.h"

namespace qgrad::cli {

namespace fs = std::filesystem;

namespace {

constexpr const char* kConfigMeta = kStoredConfigKey;
constexpr const char* kThreadsMeta = "cli.threads";  // threads the checkpoint was trained with
constexpr const char* kVersionMeta = "cli.qgrad_version";  // the qgrad build that wrote it
constexpr const char* kRanksMeta = "cli.ranks";  // the data-parallel ranks that trained it

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100 * fraction);
  return buf;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// %g: 1e+09, 0.05.
std::string general(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// "nan", "inf" or "-inf" (printf's text for NaN depends on its sign bit: "-nan").
std::string nonfinite_text(double v) {
  return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
}

// runs/<model>-<YYYYmmdd-HHMMSS>, with -2, -3, ... when taken.
std::string default_output_dir(const std::string& model) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  const std::string base = "runs/" + model + "-" + stamp;
  std::string dir = base;
  for (int i = 2; fs::exists(dir); ++i) dir = base + "-" + std::to_string(i);
  return dir;
}

// The state of the epoch in progress, kept in checkpoints so a run interrupted mid-epoch
// reports the same epoch metrics as an uninterrupted one.
struct EpochProgress {
  double loss_sum = 0;  // sum of per-example losses
  std::int64_t correct = 0;
  std::int64_t seen = 0;
  double time_s = 0;  // training time spent in this epoch so far
  double lr = 0;      // lr of the epoch's first batch
};

TensorDict progress_tensors(const EpochProgress& p, double best_acc) {
  TensorDict d;
  d.insert("train.loss_sum", scalar_tensor(p.loss_sum, TensorOptions().dtype(kFloat64)));
  d.insert("train.correct",
           scalar_tensor(static_cast<double>(p.correct), TensorOptions().dtype(kInt64)));
  d.insert("train.seen", scalar_tensor(static_cast<double>(p.seen), TensorOptions().dtype(kInt64)));
  d.insert("train.time_s", scalar_tensor(p.time_s, TensorOptions().dtype(kFloat64)));
  d.insert("train.lr", scalar_tensor(p.lr, TensorOptions().dtype(kFloat64)));
  d.insert("train.best_test_acc", scalar_tensor(best_acc, TensorOptions().dtype(kFloat64)));
  return d;
}

double extra_value(const serialize::Checkpoint& c, const std::string& key,
                   const std::string& path) {
  const Tensor* t = c.extra.find(key);
  QGRAD_CHECK(t != nullptr && t->numel() == 1, IOError, "resume: checkpoint '", path, "' has no '",
              key, "' entry (not written by qgrad train?)");
  return t->item<double>();
}

// The parts of the config that must not change when resuming, or the continuation would not be
// the run the checkpoint belongs to.
void check_resume_compatible(const nlohmann::json& saved, const nlohmann::json& now,
                             const std::string& path) {
  std::vector<std::string> keys{"model",    "batch_size", "seed",  "optimizer",
                                "schedule", "grad_clip",  "quant", "label_smoothing"};
  if (now["schedule"]["name"] == "cosine") keys.push_back("epochs");  // the period depends on it
  const nlohmann::json saved_data = saved.value("data", nlohmann::json());
  for (const char* k : {"format", "normalize", "augment"}) keys.push_back(std::string("data.") + k);
  for (const std::string& k : keys) {
    const std::size_t dot = k.find('.');
    // The recipe as this qgrad reads it: absent (checkpoints from before "quant" existed hold
    // float models) reads as null, and one stored by an older qgrad gets the keys added since
    // with their defaults.
    nlohmann::json was =
        k == "quant" ? stored_recipe(saved, "resume", path)
        : dot == std::string::npos
            ? saved.value(k, nlohmann::json())
            : (saved_data.is_object() ? saved_data.value(k.substr(dot + 1), nlohmann::json())
                                      : nlohmann::json());
    // Checkpoints from before "data.format" existed were all MNIST-format runs.
    if (k == "data.format" && was.is_null()) was = "mnist";
    const nlohmann::json& current =
        dot == std::string::npos ? now[k] : now["data"][k.substr(dot + 1)];
    const std::optional<ConfigDifference> d = first_difference(was, current, k);
    if (!d) continue;
    std::string hint;
    if (k == "quant" && was.is_null())
      hint =
          " (to start quantization-aware training from a float checkpoint, give it as "
          "\"pretrained\" instead of \"resume\")";
    throw UsageError("resume: '" + d->path + "' is " + ConfigReader::shown(d->was) +
                     " in the checkpoint '" + path + "' but " + ConfigReader::shown(d->now) +
                     " in this config; a resumed run must keep it" + hint);
  }
}

// output.dir, checked before any work: a folder (or a new path), and not holding an earlier
// run's checkpoints or metrics unless this run resumes a checkpoint of that folder. A second run
// into the same folder overwrote the first one's files and left its epoch_<N> checkpoints beside
// the new ones. A folder where a run only wrote config.json (stopped before its first
// checkpoint) holds nothing to lose.
void check_run_folder(const TrainConfig& config) {
  if (config.output.dir.empty()) return;
  check_output_folder("train", "output.dir", config.output.dir);
  const fs::path dir(config.output.dir);
  std::vector<std::string> held;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::string stem = it->path().stem().string();
    const bool checkpoint = it->path().extension() == ".safetensors" &&
                            (stem == "last" || stem == "best" || stem.rfind("epoch_", 0) == 0);
    if (checkpoint || name == "metrics.jsonl") held.push_back(name);
  }
  if (held.empty()) return;
  if (!config.resume.empty()) {
    fs::path from = fs::path(config.resume).parent_path();
    if (from.empty()) from = ".";
    if (fs::equivalent(from, dir, ec)) return;  // continuing the run that is there
  }
  std::sort(held.begin(), held.end());
  std::string names;
  for (std::size_t i = 0; i < held.size() && i < 4; ++i) names += (i ? ", " : "") + held[i];
  if (held.size() > 4) names += ", ...";
  throw UsageError("train: output.dir '" + config.output.dir + "' holds an earlier run (" + names +
                   "); continue it with \"resume\": \"" + (dir / "last.safetensors").string() +
                   "\", or give another output.dir (or remove that folder)");
}

// Warns (once per file) about the temporaries that a killed checkpoint or metrics write left in
// the output folder, and removes them: those of this run's files (fixed names, and
// epoch_<N>.safetensors for any N).
void remove_orphaned_temporaries(const fs::path& dir, std::ostream& out) {
  std::set<std::string> targets{"config.json", "metrics.jsonl", "last.safetensors",
                                "best.safetensors"};
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::size_t tmp = name.find(".safetensors.tmp.");
    if (name.rfind("epoch_", 0) == 0 && tmp != std::string::npos)
      targets.insert(name.substr(0, tmp + 12));
  }
  for (const std::string& t : targets) {
    const int n = remove_stale_temporaries((dir / t).string());
    if (n > 0)
      out << "  removed " << n << " temporary file" << (n == 1 ? "" : "s") << " of " << t
          << " left by an interrupted write\n";
  }
}

// The position of every Dropout layer's own random stream, so a resumed run draws the same masks.
void save_dropout_streams(nn::Module& model, TensorDict& extra) {
  for (const auto& it : model.named_modules()) {
    if (auto d = std::dynamic_pointer_cast<nn::Dropout>(it.value))
      extra.insert("rng." + it.key + ".offset",
                   from_vector<std::int64_t>({static_cast<std::int64_t>(d->generator().offset())}));
  }
}

void restore_dropout_streams(nn::Module& model, const serialize::Checkpoint& c,
                             const std::string& path) {
  for (const auto& it : model.named_modules()) {
    if (auto d = std::dynamic_pointer_cast<nn::Dropout>(it.value)) {
      const std::string key = "rng." + it.key + ".offset";
      const Tensor* t = c.extra.find(key);
      QGRAD_CHECK(t != nullptr && t->numel() == 1 && t->dtype() == kInt64, IOError,
                  "resume: checkpoint '", path, "' has no int64 '", key,
                  "' entry for dropout layer '", it.key, "'");
      d->generator().set_offset(static_cast<std::uint64_t>(t->data_ptr<std::int64_t>()[0]));
    }
  }
}

// The model (quantized or not: lazily sized quantizer buffers take the checkpoint's shapes),
// optimiser and scheduler state of a checkpoint, restored strictly.
void restore_training_state(const serialize::Checkpoint& c, nn::Module& model,
                            optim::Optimizer& optimizer, optim::LRScheduler* scheduler,
                            const std::string& path) {
  QGRAD_CHECK(!c.optimizer.empty(), IOError, "resume: '", path, "' holds no optimizer state");
  QGRAD_CHECK(!scheduler || !c.scheduler.empty(), IOError, "resume: '", path,
              "' holds no scheduler state");
  quant::load_quant_state_dict(model, c.model, /*strict=*/true);
  optimizer.load_state_dict(c.optimizer);
  if (scheduler) scheduler->load_state_dict(c.scheduler);
}

// The config's device. Off the CPU, a "quant" recipe must give quantizers that run there (asked
// of a probe model before anything is loaded), and a GPU must be visible (device_option.h).
Device resolve_device(const TrainConfig& config) {
  const std::string what = "device \"" + config.device + "\"";
  const Device d = parse_device("device", config.device);
  if (config.quant)
    require_recipe_runs_on(what, d, config, *config.quant);
  else
    require_visible(what, d);
  return d;
}

}  // namespace

TrainOutcome run_training(const TrainConfig& config_in, std::ostream& leader_out,
                          const StopRequest& stop,
                          std::shared_ptr<distributed::ProcessGroup> group) {
  TrainConfig config = config_in;
  // The ranks of a data-parallel job (mpirun -np N), or this process alone. Rank 0 alone prints
  // and writes files; every rank reads its part of each global batch of N x batch_size.
  const bool nccl = config.distributed.backend == "nccl";
  if (nccl && config.device.rfind("cuda", 0) != 0)
    throw UsageError(
        "train: \"distributed.backend\": \"nccl\" all-reduces GPU tensors, but the "
        "device is \"" +
        config.device + "\"; use \"mpi\" or a cuda device");
  if (!group)
    group = distributed::init_process_group(nccl ? distributed::Backend::Nccl
                                                 : distributed::Backend::Mpi);
  const bool leader = group->rank() == 0;
  const int ranks = group->size();
  std::ostream silent(nullptr);  // a stream without a buffer: what it is given goes nowhere
  std::ostream& out = leader ? leader_out : silent;
  // "cuda" under mpirun: each rank on this machine takes its own GPU, in turn.
  if (ranks > 1 && config.device == "cuda" && cuda_device_count() > 0)
    config.device =
        "cuda:" + std::to_string(distributed::launched_local_rank() % cuda_device_count());
  // Read with the config: the device check needs to know whether there is one, the model below.
  const std::optional<quant::QuantRecipe>& recipe = config.quant;
  const Device device = resolve_device(config);
  const int threads = use_compute_threads(config);
  // Process-wide, as torch.use_deterministic_algorithms: set for this run either way, so an
  // earlier deterministic run in the same process does not leak into this one.
  set_deterministic_algorithms(config.deterministic);

  // Resume: the checkpoint's own config must agree on everything that shapes the run.
  serialize::Checkpoint resumed;
  if (!config.resume.empty()) {
    resumed = serialize::load_checkpoint(config.resume);
    // A PTQ checkpoint has no training state to continue (no optimiser, no data position).
    if (resumed.metadata.count(kPtqMetadataKey))
      throw UsageError("resume: '" + config.resume +
                       "' was written by qgrad ptq, not by a training run, so there is no run to "
                       "continue; to fine-tune it, give it as \"pretrained\" instead of "
                       "\"resume\" (with its recipe as \"quant\")");
    check_resume_compatible(stored_config_json(resumed, "resume", config.resume), to_json(config),
                            config.resume);
    const auto was = resumed.metadata.find(kRanksMeta);
    const std::string saved_ranks = was == resumed.metadata.end() ? "1" : was->second;
    if (saved_ranks != std::to_string(ranks))
      throw UsageError("resume: '" + config.resume + "' was trained by " + saved_ranks +
                       " data-parallel rank" + (saved_ranks == "1" ? "" : "s") +
                       " and this run has " + std::to_string(ranks) +
                       ": resume it with the same number (" +
                       (saved_ranks == "1" ? std::string("without mpirun")
                                           : "mpirun -np " + saved_ranks + " qgrad train ...") +
                       "), since the examples of every step depend on it");
    if (config.output.dir.empty()) {
      const fs::path parent = fs::path(config.resume).parent_path();
      config.output.dir = parent.empty() ? "." : parent.string();
    }
  }
  if (leader) check_run_folder(config);
  std::shared_ptr<data::Dataset> train_set = make_dataset(config.data, data::Split::Train);
  std::shared_ptr<data::Dataset> test_set = make_dataset(config.data, data::Split::Test);
  const DataShape shape = data_shape(config.data);
  // MNIST-format images of another size keep today's behaviour (the model is built for 28x28);
  // the other formats size the model from the data, so both splits must agree with it. Image
  // folders hold images of any size, which the transforms crop to the model's.
  const bool folder = config.data.format == "image_folder";
  if (config.data.format != "mnist" && !folder) {
    check_example_shape(*train_set, shape, "the training set (" + data_source(config.data) + ")");
    check_example_shape(*test_set, shape, "the test set (" + data_source(config.data) + ")");
  }
  const Shape image = folder ? Shape{shape.image.channels, shape.image.height, shape.image.width}
                             : train_set->get(0).data.shape();  // [C, H, W]
  data::DataLoader train_loader(train_set,
                                data::DataLoaderOptions()
                                    .batch_size(config.batch_size)
                                    .shuffle(true)
                                    .prefetch(background_loading(config))
                                    .workers(static_cast<int>(config.data.workers))
                                    .seed(static_cast<std::uint64_t>(config.seed))
                                    .shard(group->rank(), ranks),
                                build_train_transforms(config, image[1], image[2]));
  // With several ranks, evaluate() takes the batches it needs directly: nothing to prefetch.
  data::DataLoader test_loader(test_set,
                               data::DataLoaderOptions()
                                   .batch_size(config.eval_batch_size)
                                   .prefetch(ranks == 1 && background_loading(config))
                                   .workers(static_cast<int>(config.data.workers)),
                               build_eval_transforms(config));

  // The model: float weights (the seed's, or pretrained ones), then quantized and calibrated as
  // the recipe says. A resumed run takes every weight and quantizer state from its checkpoint.
  // A quantized "pretrained" checkpoint (qgrad ptq's, or a QAT run's with the same recipe) is
  // loaded after quantization, with its quantizer state, and replaces the calibration.
  std::shared_ptr<nn::UnaryModule> model = build_model(config);
  std::vector<std::string> model_lines;
  std::optional<PretrainedFile> pretrained;
  if (!config.pretrained.empty()) {
    if (config.resume.empty())
      pretrained = read_pretrained(config.pretrained);
    else
      model_lines.push_back("pretrained: not loaded, the resumed checkpoint holds the weights");
  }
  auto load = [&] {
    model_lines.push_back("pretrained: " +
                          describe(load_pretrained(*model, config.model, *pretrained, config.quant),
                                   config.pretrained));
  };
  if (pretrained && !pretrained->quantized()) load();
  if (recipe) {
    model_lines.push_back("quant: " + describe(quantize_for_training(*model, *recipe)));
    // The quantizers reduce their statistics over the ranks (calibration and training alike).
    if (ranks > 1) quant::synchronize_statistics(*model, group);
    if (!config.resume.empty())
      model_lines.push_back("quant: quantizer state restored from the checkpoint, no calibration");
    else if (!pretrained || !pretrained->quantized())
      model_lines.push_back(
          "quant: " +
          describe(calibrate_on_training_set(*model, *recipe, train_set, config, kCPU, group.get()),
                   *recipe));
  }
  if (pretrained && pretrained->quantized()) load();  // float training: the error says why
  if (!device.is_cpu()) model->to(device);
  if (config.distributed.sync_batchnorm && ranks > 1) {
    const std::int64_t n = distributed::convert_sync_batchnorm(*model, group);
    model_lines.push_back("distributed: " + std::to_string(n) +
                          " batch norm layers with the global batch's statistics (SyncBatchNorm)");
  }
  // After quantization and the move to the device, which replace tensors its hooks refer to.
  distributed::DistributedDataParallel ddp(
      model, group,
      distributed::DataParallelOptions{config.distributed.bucket_mb,
                                       config.distributed.broadcast_buffers});
  // Only now that the data and the model are ready (a bad "pretrained" file leaves no folder).
  if (config.output.dir.empty()) {
    // Rank 0's timestamped name, so that every rank names the same folder.
    std::string name = leader ? default_output_dir(config.model) : std::string();
    if (ranks > 1) name = distributed::broadcast_string(*group, name);
    config.output.dir = name;
  }
  const fs::path dir(config.output.dir);
  std::ostringstream notes;  // printed with the run's header below
  if (leader) {
    fs::create_directories(config.output.dir);
    remove_orphaned_temporaries(dir, notes);
  }
  std::unique_ptr<optim::Optimizer> optimizer = build_optimizer(config, model->parameters());
  std::unique_ptr<optim::LRScheduler> scheduler =
      build_scheduler(config, *optimizer, train_loader.batches_per_epoch());

  EpochProgress progress;
  double best_acc = -1;
  std::int64_t step = 0;
  std::int64_t done_epochs = 0;
  bool mid_epoch = false;
  if (!config.resume.empty()) {
    // Restores strictly: a different architecture, optimiser kind or schedule throws.
    restore_training_state(resumed, *model, *optimizer, scheduler.get(), config.resume);
    TensorDict loader_state;
    for (const auto& it : resumed.extra)
      if (it.key.rfind("loader.", 0) == 0) loader_state.insert(it.key.substr(7), it.value);
    train_loader.load_state_dict(loader_state);
    restore_dropout_streams(*model, resumed, config.resume);
    step = resumed.step;
    done_epochs = resumed.epoch;
    mid_epoch = train_loader.state().batch > 0;
    progress.loss_sum = extra_value(resumed, "train.loss_sum", config.resume);
    progress.correct =
        static_cast<std::int64_t>(extra_value(resumed, "train.correct", config.resume));
    progress.seen = static_cast<std::int64_t>(extra_value(resumed, "train.seen", config.resume));
    progress.time_s = extra_value(resumed, "train.time_s", config.resume);
    progress.lr = extra_value(resumed, "train.lr", config.resume);
    best_acc = extra_value(resumed, "train.best_test_acc", config.resume);
  }

  nlohmann::json resolved = to_json(config);
  if (leader) {
    // config.json also says which qgrad ran (parse_train_config ignores this key on input, so
    // the file still works as a --config).
    nlohmann::json written = resolved;
    written["qgrad"] = {{"version", version()}, {"commit", git_commit()}};
    write_file_atomic((dir / "config.json").string(), written.dump(2) + "\n");
  }
  if (leader && !config.resume.empty()) {
    // Resuming into a new folder: carry over the metrics of the epochs the checkpoint covers.
    const fs::path from = fs::path(config.resume).parent_path() / "metrics.jsonl";
    const fs::path to = dir / "metrics.jsonl";
    std::error_code ec;
    if (!fs::exists(to) && fs::exists(from)) fs::copy_file(from, to, ec);
  }
  // Rank 0's log; the other ranks keep their records in memory.
  std::optional<MetricsLog> metrics;
  std::vector<EpochMetrics> records;
  if (leader) {
    metrics.emplace((dir / "metrics.jsonl").string(), done_epochs);
    if (!metrics->warning().empty()) notes << "  warning: " << metrics->warning() << "\n";
    records = metrics->records();
  }
  if (config.batch_size > static_cast<std::int64_t>(train_set->size()))
    notes << "  warning: batch_size " << config.batch_size << " is larger than the "
          << train_set->size() << " training images: every step trains on all of them at once "
          << "(one batch per epoch, memory for " << train_set->size() << " images' activations)\n";

  const std::int64_t batches = train_loader.batches_per_epoch();
  out << "qgrad train: " << config.model << " (" << model->num_parameters(true)
      << " parameters) on " << data_source(config.data) << ": " << train_set->size() << " train / "
      << test_set->size() << " test images\n"
      << "  " << config.epochs << " epochs x " << batches << " batches of " << config.batch_size
      << (ranks > 1 ? " a rank (" + std::to_string(ranks) + " data-parallel ranks, global batch " +
                          std::to_string(ranks * config.batch_size) + ")"
                    : std::string())
      << ", " << config.optimizer.name << " lr " << config.optimizer.lr << ", schedule "
      << config.schedule.name << ", " << omp_get_max_threads() << " threads, device "
      << device.str() << "\n"
      << "  output " << config.output.dir << "\n";
  for (const std::string& line : model_lines) out << "  " << line << "\n";
  out << notes.str();
  if (!config.resume.empty()) {
    out << "  resumed from " << config.resume << " at epoch " << train_loader.state().epoch + 1
        << ", batch " << train_loader.state().batch << "\n";
    // Parallel reductions group sums by thread, so only the same thread count is bit-exact.
    auto it = resumed.metadata.find(kThreadsMeta);
    if (it != resumed.metadata.end() && it->second != std::to_string(threads))
      out << "  note: the checkpoint was trained with " << it->second << " threads, this run uses "
          << threads << ": results will differ in the last bits from an uninterrupted run\n";
  }
  out << std::flush;

  auto save = [&](const fs::path& path, std::int64_t completed) {
    TensorDict extra = progress_tensors(progress, best_acc);
    for (const auto& it : train_loader.state_dict()) extra.insert("loader." + it.key, it.value);
    save_dropout_streams(*model, extra);
    if (!leader) return;
    serialize::save_checkpoint(path.string(), *model, optimizer.get(), scheduler.get(), completed,
                               step,
                               {{kConfigMeta, resolved.dump()},
                                {kThreadsMeta, std::to_string(threads)},
                                {kVersionMeta, version_string()},
                                {kRanksMeta, std::to_string(ranks)}},
                               extra);
  };

  ProgressBar bar(out, resolve_progress_mode(config.output.progress, stdout_is_terminal()),
                  config.output.log_interval_s);
  InterruptGuard interrupt;
  TrainOutcome outcome;
  outcome.output_dir = config.output.dir;
  const CrossEntropyOptions loss_options =
      CrossEntropyOptions().label_smoothing(config.label_smoothing);

  bool stopping = false;
  std::int64_t nonfinite_steps = 0;
  // The host reads the step statistics every step on the CPU (free there), every 32 on a GPU (each
  // read waits for it and leaves it idle while the next step is queued).
  StepStats stats(device, device.is_cpu() ? 1 : 32);
  // On a GPU, batches travel through pinned memory on a copy stream, beside the previous step.
  data::BatchUploader uploader(device);
  // Folds what the device summed into the epoch's progress; stops a diverged run.
  auto absorb = [&](const StepStats::Window& w, std::int64_t epoch, std::int64_t done) {
    if (w.nonfinite_steps > 0) {
      nonfinite_steps += w.nonfinite_steps;
      if (config.nonfinite_loss == "stop") {
        bar.end_epoch();
        const std::int64_t b = w.first_nonfinite_batch;
        throw TrainingDiverged(
            "train: the training loss is " + nonfinite_text(w.loss_sum) + " at epoch " +
            std::to_string(epoch + 1) + ", batch " + std::to_string(b + 1) + "/" +
            std::to_string(batches) + " (step " + std::to_string(step - (done - 1 - b)) +
            "): training diverged. Lower optimizer.lr (now " + general(config.optimizer.lr) +
            "), set grad_clip, or set \"nonfinite_loss\": \"continue\" to train on. The "
            "checkpoints in " +
            config.output.dir + " hold the last finite epoch, if any");
      }
    }
    progress.loss_sum += w.loss_sum;
    progress.correct += w.correct;
    progress.seen += w.examples;
  };
  for (std::int64_t epoch = train_loader.epoch(); epoch < config.epochs; ++epoch) {
    model->train();
    const std::int64_t first = train_loader.state().batch;
    if (!mid_epoch)
      progress = EpochProgress{0, 0, 0, 0, optimizer->param_groups()[0].options().get_lr()};
    mid_epoch = false;
    bar.begin_epoch(epoch + 1, config.epochs, batches, first);
    const auto start = std::chrono::steady_clock::now();
    const double time_before = progress.time_s;
    std::int64_t images = 0, done = first;
    while (std::optional<data::Batch> b = train_loader.next()) {
      const data::Batch on_device = uploader.upload(*b);
      const Tensor &x = on_device.data, &t = on_device.target;
      Tensor logits = model->forward(x);
      Tensor loss = cross_entropy(logits, t, loss_options);
      optimizer->zero_grad();
      loss.backward();
      ddp.synchronize();  // the gradients averaged over the ranks (nothing to do for one)
      if (config.grad_clip > 0)
        nn::utils::clip_grad_norm_tensor_(optimizer->parameters(), config.grad_clip);
      optimizer->step();
      if (scheduler) scheduler->step();
      ++step;
      stats.add(loss, logits, t, done);
      images += t.shape()[0];
      ++done;
      if (stats.due() || done == batches) absorb(stats.read(), epoch, done);
      progress.time_s = time_before + seconds_since(start);
      // Before the first read of an epoch on a GPU no mean loss is known yet.
      if (progress.seen > 0)
        bar.update(done, images, progress.loss_sum / static_cast<double>(progress.seen));
      bool stop_here = interrupt.interrupted() || (stop && stop(step));
      if (ranks > 1) {
        // Every rank stops at the same step, or the others would wait for it forever.
        stop_here = distributed::all_reduce_values(*group, {stop_here ? 1.0 : 0.0},
                                                   distributed::ReduceOp::Max)[0] != 0;
      }
      if (stop_here) stopping = true;
      if (stopping && done < batches) {
        if (!stats.empty()) absorb(stats.read(), epoch, done);  // the checkpoint saves progress
        bar.end_epoch();
        save(dir / "last.safetensors", epoch);
        out << "interrupted at epoch " << epoch + 1 << ", batch " << done << "/" << batches
            << ": checkpoint " << (dir / "last.safetensors").string()
            << " (continue with \"resume\": \"" << (dir / "last.safetensors").string() << "\")\n"
            << std::flush;
        outcome.epochs = records;
        outcome.interrupted = true;
        group->barrier();  // rank 0's files are complete when any rank returns
        return outcome;
      }
    }
    if (!stats.empty()) absorb(stats.read(), epoch, done);
    bar.end_epoch();
    if (ranks > 1) {
      // The epoch's training loss and accuracy over all ranks' examples.
      const std::vector<double> v =
          distributed::all_reduce_values(*group,
                                         {progress.loss_sum, static_cast<double>(progress.correct),
                                          static_cast<double>(progress.seen)},
                                         distributed::ReduceOp::Sum);
      progress.loss_sum = v[0];
      progress.correct = static_cast<std::int64_t>(v[1]);
      progress.seen = static_cast<std::int64_t>(v[2]);
    }

    EvalResult test = evaluate(*model, test_loader, device, group.get());
    EpochMetrics m;
    m.epoch = epoch + 1;
    m.train_loss = progress.loss_sum / static_cast<double>(progress.seen);
    m.train_acc = static_cast<double>(progress.correct) / static_cast<double>(progress.seen);
    m.test_loss = test.loss;
    m.test_acc = test.accuracy;
    m.epoch_time_s = progress.time_s;
    m.images_per_s = static_cast<double>(progress.seen) / progress.time_s;
    m.lr = progress.lr;
    m.eval_time_s = test.time_s;
    if (metrics) metrics->append(m);
    records.push_back(m);
    if (nonfinite_steps > 0)
      out << "warning: " << nonfinite_steps << " training step" << (nonfinite_steps == 1 ? "" : "s")
          << " of epoch " << m.epoch << " had a non-finite loss (\"nonfinite_loss\": "
          << "\"continue\"); this epoch cannot become best.safetensors\n";
    nonfinite_steps = 0;
    out << "epoch " << m.epoch << "/" << config.epochs << ": train loss " << fixed(m.train_loss, 4)
        << " acc " << percent(m.train_acc) << " | test loss " << fixed(m.test_loss, 4) << " acc "
        << percent(m.test_acc) << " | " << fixed(m.images_per_s, 0) << " img/s | "
        << fixed(m.epoch_time_s, 1) << " s\n"
        << std::flush;

    progress = EpochProgress{};
    const bool finite = std::isfinite(m.train_loss) && std::isfinite(m.test_loss);
    if (!finite && config.nonfinite_loss == "stop")
      throw TrainingDiverged("train: the test loss is " + nonfinite_text(m.test_loss) +
                             " after epoch " + std::to_string(m.epoch) +
                             ": the weights are no longer finite (training diverged). Lower "
                             "optimizer.lr, set grad_clip, or set \"nonfinite_loss\": "
                             "\"continue\" to train on");
    // A diverged model is never "best", whatever its accuracy (argmax of nan picks class 0).
    const bool best = finite && m.test_acc > best_acc;
    if (best) best_acc = m.test_acc;
    save(dir / "last.safetensors", epoch + 1);
    if (best) save(dir / "best.safetensors", epoch + 1);
    if (config.output.checkpoint_every > 0 && (epoch + 1) % config.output.checkpoint_every == 0)
      save(dir / ("epoch_" + std::to_string(epoch + 1) + ".safetensors"), epoch + 1);
    if (stopping && epoch + 1 < config.epochs) {
      out << "interrupted after epoch " << epoch + 1 << ": checkpoint "
          << (dir / "last.safetensors").string() << "\n"
          << std::flush;
      outcome.epochs = records;
      outcome.interrupted = true;
      group->barrier();
      return outcome;
    }
  }

  outcome.epochs = records;
  out << "\n"
      << format_summary_table(outcome.epochs) << "checkpoints and metrics in " << config.output.dir
      << "\n"
      << std::flush;
  group->barrier();  // rank 0's files are complete when any rank returns
  return outcome;
}

std::string train_usage() {
  return "usage: qgrad train [--config FILE.json] [--device DEVICE]\n"
         "\n"
         "--device cpu|cuda|cuda:N overrides the config's \"device\".\n"
         "\n"
         "Trains a model on an MNIST-format dataset (default: LeNet-5 with batch norm on\n"
         "Fashion-MNIST) and writes metrics.jsonl, config.json and checkpoints\n"
         "(last/best.safetensors) to the output folder. Every config key is optional.\n"
         "With a \"quant\" recipe the model is trained quantization-aware: the float model\n"
         "(\"pretrained\" weights, if given) is quantized, calibrated when the recipe asks for\n"
         "it, and trained with fake quantization; eval reports the fake-quantized accuracy.\n"
         "Ctrl-C stops after the current batch and writes a checkpoint to resume from.\n"
         "\n"
         "Data-parallel: `mpirun -np N qgrad train --config FILE.json` trains on N processes\n"
         "(on one machine or several): each reads its part of every global batch of\n"
         "N x batch_size, gradients are averaged and the quantizers' statistics reduced over\n"
         "the ranks, and rank 0 alone prints and writes (docs/distributed.md).\n"
         "\n"
         "config keys (JSON, nested objects by dots):\n" +
         train_config_help() +
         "\n"
         "A nan or inf training loss stops the run with exit status 1, naming the epoch and\n"
         "step (\"nonfinite_loss\": \"continue\" trains on instead); a model with a\n"
         "non-finite loss never becomes best.safetensors.\n"
         "\n"
         "exit status: 0 done, 1 error (also a diverged run), 2 bad usage or config,\n"
         "130 interrupted\n";
}

int train_command(const std::vector<std::string>& args, std::ostream& out) {
  std::string config_path, device;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--help" || args[i] == "-h") {
      out << train_usage();
      return 0;
    }
    if (args[i] == "--config" || args[i] == "-c") {
      if (i + 1 >= args.size()) throw UsageError("train: --config needs a file name");
      config_path = args[++i];
    } else if (args[i].rfind("--config=", 0) == 0) {
      config_path = args[i].substr(9);
    } else if (args[i] == "--device") {
      if (i + 1 >= args.size()) throw UsageError("train: --device needs cpu, cuda or cuda:<index>");
      device = args[++i];
    } else if (args[i].rfind("--device=", 0) == 0) {
      device = args[i].substr(9);
    } else {
      throw UsageError("train: unknown argument '" + args[i] + "' (see qgrad train --help)");
    }
  }
  TrainConfig config = config_path.empty() ? parse_train_config(nlohmann::json::object())
                                           : load_train_config(config_path);
  if (!device.empty()) {
    try {
      Device::parse(device);
    } catch (const ValueError& e) {
      throw UsageError(std::string("train: --device: ") + e.what());
    }
    config.device = device;
  }
  return run_training(config, out).interrupted ? 130 : 0;
}

}  // namespace qgrad::cli
