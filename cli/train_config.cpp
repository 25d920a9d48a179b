// TrainConfig parsing: one function per section, cross-key checks (keys that do not apply to the
// chosen optimiser or schedule are rejected rather than silently ignored), the "quant" recipe
// checked by QuantRecipe itself, to_json and the documented key table shown by
// `qgrad train --help`.
#include "cli/train_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "cli/config_reader.h"
#include "cli/usage_error.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/json_parse.h"
#include "nn/models/zoo.h"

namespace qgrad::cli {

namespace {

// The normalisation a format gets when the config gives none: Fashion-MNIST's for mnist, the
// usual per-channel constants for CIFAR and ImageNet's for image folders, none for npy (arrays
// are taken as prepared).
NormalizeConfig default_normalize(const std::string& format, std::int64_t channels) {
  NormalizeConfig n;
  if (format == "cifar10") {
    n.mean = {0.4914, 0.4822, 0.4465};
    n.std = {0.2470, 0.2435, 0.2616};
  } else if (format == "cifar100") {
    n.mean = {0.5071, 0.4865, 0.4409};
    n.std = {0.2673, 0.2564, 0.2762};
  } else if (format == "npy") {
    n.enabled = false;
  } else if (format == "image_folder" && channels == 3) {
    n.mean = {0.485, 0.456, 0.406};
    n.std = {0.229, 0.224, 0.225};
  } else if (format == "image_folder") {  // grey: the mean of ImageNet's channel statistics
    n.mean = {0.449};
    n.std = {0.226};
  }
  return n;
}

NormalizeConfig parse_normalize(ConfigReader& data, const std::string& format,
                                std::int64_t channels) {
  NormalizeConfig n = default_normalize(format, channels);
  std::optional<nlohmann::json> raw = data.raw("normalize");
  if (!raw) return n;
  if (raw->is_boolean()) {
    // true: the format's constants (npy has none to turn on).
    if (*raw == true && format == "npy")
      data.fail("normalize",
                "true has no default for data.format \"npy\"; give {\"mean\": "
                "..., \"std\": ...}");
    n.enabled = *raw == true;
    return n;
  }
  if (!raw->is_object())
    data.fail("normalize", "must be an object {\"mean\": ..., \"std\": ...} or false, got " +
                               ConfigReader::shown(*raw));
  ConfigReader r(*raw, data.key_path("normalize"));
  if (format == "npy") {  // no constants to start from: an identity unless given
    n.mean = {0.0};
    n.std = {1.0};
  }
  n.enabled = true;
  n.mean = r.numbers("mean", n.mean, NumberRule::any(), 16);
  n.std = r.numbers("std", n.std, NumberRule::positive(), 16);
  r.finish();
  if (n.mean.size() != n.std.size() && n.mean.size() != 1 && n.std.size() != 1)
    r.fail("mean", "and std must have the same number of channels (or one value), got " +
                       std::to_string(n.mean.size()) + " and " + std::to_string(n.std.size()));
  // image_folder knows its channels: a mismatch fails here rather than on the first batch.
  if (format == "image_folder")
    for (const auto& [key, v] : {std::pair{"mean", &n.mean}, std::pair{"std", &n.std}})
      if (v->size() != 1 && static_cast<std::int64_t>(v->size()) != channels)
        r.fail(key, "has " + std::to_string(v->size()) + " values for data.channels " +
                        std::to_string(channels) + " (give one per channel, or one for all)");
  return n;
}

DataConfig parse_data(ConfigReader& root) {
  DataConfig d;
  ConfigReader r = root.object("data");
  d.format = r.choice("format", d.format, {"mnist", "cifar10", "cifar100", "npy", "image_folder"});
  const bool cifar = d.format == "cifar10" || d.format == "cifar100", npy = d.format == "npy";
  const bool folder = d.format == "image_folder";
  if (cifar && !r.has("dir"))
    r.fail("dir", "is required for data.format \"" + d.format +
                      "\" (the folder of the extracted binary version)");
  if (folder && !r.has("dir"))
    r.fail("dir",
           "is required for data.format \"image_folder\" (the folder of class folders, "
           "or of train/ and val/ holding them)");
  d.dir = r.string("dir", npy ? "." : d.dir);
  // Keys of other formats are rejected rather than silently ignored.
  const std::vector<std::string> npy_keys{"train_images", "train_labels", "test_images",
                                          "test_labels",  "layout",       "num_classes"};
  for (const std::string& k : npy_keys)
    if (!npy && r.has(k))
      r.fail(k, "applies only to data.format \"npy\", not \"" + d.format + "\"");
    else if (!npy)
      r.raw(k);  // known, for the list of accepted keys
  if (d.format != "cifar100" && r.has("label"))
    r.fail("label", "applies only to data.format \"cifar100\", not \"" + d.format + "\"");
  d.label = r.choice("label", d.label, {"fine", "coarse"});
  if (npy) {
    const std::pair<const char*, std::string*> files[] = {{"train_images", &d.train_images},
                                                          {"train_labels", &d.train_labels},
                                                          {"test_images", &d.test_images},
                                                          {"test_labels", &d.test_labels}};
    for (const auto& [k, f] : files) {
      if (!r.has(k)) r.fail(k, "is required for data.format \"npy\" (a .npy file)");
      *f = r.string(k, "");
      if (f->empty()) r.fail(k, "must name a .npy file, got \"\"");
    }
  }
  d.layout = r.choice("layout", d.layout, {"nchw", "nhwc"});
  d.num_classes = r.integer("num_classes", d.num_classes, 1, kMaxClasses);
  for (const char* k : {"image_size", "resize", "channels", "val_fraction"})
    if (!folder && r.has(k))
      r.fail(k, "applies only to data.format \"image_folder\", not \"" + d.format + "\"");
  d.image_size = r.integer("image_size", d.image_size, 1, kMaxImageSize);
  // torchvision's ImageNet recipe: resize to 256, crop 224; other sizes keep that proportion.
  const auto default_resize =
      static_cast<std::int64_t>(std::llround(static_cast<double>(d.image_size) * 256.0 / 224.0));
  d.resize = r.integer("resize", default_resize, 1, kMaxImageSize);
  if (d.resize < d.image_size)
    r.fail("resize", "must be at least data.image_size (" + std::to_string(d.image_size) +
                         ") so that the centre crop fits the resized image, got " +
                         std::to_string(d.resize));
  d.channels = r.integer("channels", d.channels, 1, 3);
  if (d.channels == 2) r.fail("channels", "must be 1 (grey) or 3 (RGB), got 2");
  d.val_fraction = r.number("val_fraction", d.val_fraction, NumberRule::in_half_open(0, 1));
  d.workers = r.integer("workers", d.workers, 1, kMaxWorkers);
  if (r.has("prefetch")) d.prefetch = r.boolean("prefetch", false);
  r.raw("prefetch");  // null reads as unset (automatic)
  if (d.workers > 1 && d.prefetch && !*d.prefetch)
    r.fail("workers",
           "is " + std::to_string(d.workers) +
               " but data.prefetch is false (workers prepare batches in the background)");
  d.normalize = parse_normalize(r, d.format, d.channels);
  ConfigReader a = r.object("augment");
  d.augment.random_crop_padding = a.integer("random_crop_padding", 0, 0, kMaxCropPadding);
  d.augment.hflip = a.boolean("hflip", false);
  if (!folder && a.has("random_resized_crop"))
    a.fail("random_resized_crop",
           "applies only to data.format \"image_folder\", not \"" + d.format + "\"");
  d.augment.random_resized_crop = a.boolean("random_resized_crop", folder);
  a.finish();
  r.finish();
  return d;
}

OptimizerConfig parse_optimizer(ConfigReader& root) {
  OptimizerConfig o;
  ConfigReader r = root.object("optimizer");
  o.name = r.choice("name", o.name, {"sgd", "adam", "adamw"});
  const bool sgd = o.name == "sgd";
  o.lr = r.number("lr", sgd ? 0.05 : 1e-3, NumberRule::positive());
  o.weight_decay =
      r.number("weight_decay", o.name == "adamw" ? 1e-2 : 5e-4, NumberRule::non_negative());
  // Ask for every key so finish() knows them all, then reject the ones for the other kind.
  for (const char* k : sgd ? std::vector<const char*>{"betas", "eps"}
                           : std::vector<const char*>{"momentum", "nesterov"})
    if (r.has(k)) r.fail(k, "does not apply to optimizer.name \"" + o.name + "\"");
  if (sgd) {
    o.momentum = r.number("momentum", o.momentum, NumberRule::in_half_open(0, 1));
    o.nesterov = r.boolean("nesterov", o.nesterov);
    if (o.nesterov && o.momentum == 0) r.fail("nesterov", "needs optimizer.momentum > 0");
    r.raw("betas");
    r.raw("eps");
  } else {
    std::vector<double> betas =
        r.fixed_numbers("betas", {o.beta1, o.beta2}, NumberRule::in_half_open(0, 1), 2);
    o.beta1 = betas[0];
    o.beta2 = betas[1];
    o.eps = r.number("eps", o.eps, NumberRule::positive());
    r.raw("momentum");
    r.raw("nesterov");
  }
  r.finish();
  return o;
}

ScheduleConfig parse_schedule(ConfigReader& root, std::int64_t epochs) {
  ScheduleConfig s;
  ConfigReader r = root.object("schedule");
  s.name = r.choice("name", s.name, {"constant", "step", "multistep", "cosine"});
  s.warmup_epochs = r.integer("warmup_epochs", 0, 0, kMaxEpochs);
  s.warmup_steps = r.integer("warmup_steps", 0, 0, kMaxWarmupSteps);
  if (s.warmup_epochs > 0 && s.warmup_steps > 0)
    r.fail("warmup_steps", "and schedule.warmup_epochs cannot both be set");
  s.warmup_start_factor =
      r.number("warmup_start_factor", s.warmup_start_factor, NumberRule::in_closed(1e-12, 1));
  struct Only {
    const char* key;
    std::vector<std::string> names;
  };
  for (const Only& o : {Only{"step_size", {"step"}}, Only{"milestones", {"multistep"}},
                        Only{"gamma", {"step", "multistep"}}, Only{"eta_min", {"cosine"}}}) {
    if (r.has(o.key) && std::find(o.names.begin(), o.names.end(), s.name) == o.names.end())
      r.fail(o.key, "does not apply to schedule.name \"" + s.name + "\"");
  }
  s.step_size = r.integer("step_size", s.step_size, 1, kMaxEpochs);
  // ceil(epochs / 2) and floor((3 * epochs + 3) / 4), written so that no product can overflow.
  const std::int64_t half = epochs / 2 + epochs % 2;
  const std::int64_t three_quarters = epochs - epochs / 4;
  std::vector<std::int64_t> fallback_milestones{std::max<std::int64_t>(1, half)};
  if (three_quarters > fallback_milestones[0]) fallback_milestones.push_back(three_quarters);
  s.milestones = r.increasing_integers("milestones", fallback_milestones, 1, kMaxEpochs);
  if (s.name != "multistep") s.milestones.clear();
  s.gamma = r.number("gamma", s.gamma, NumberRule::positive());
  s.eta_min = r.number("eta_min", s.eta_min, NumberRule::non_negative());
  if (s.warmup_epochs > 0 && s.name == "multistep" && s.milestones[0] <= s.warmup_epochs)
    r.fail("milestones", "must come after the warm-up (schedule.warmup_epochs = " +
                             std::to_string(s.warmup_epochs) + ")");
  if (s.name == "cosine" && s.warmup_epochs >= epochs)
    r.fail("warmup_epochs", "must be smaller than epochs for a cosine schedule");
  r.finish();
  return s;
}

OutputConfig parse_output(ConfigReader& root) {
  OutputConfig o;
  ConfigReader r = root.object("output");
  o.dir = r.string("dir", "");
  o.checkpoint_every = r.integer("checkpoint_every", 0, 0, kMaxEpochs);
  o.progress = r.choice("progress", o.progress, {"auto", "bar", "lines", "off"});
  o.log_interval_s = r.number("log_interval_s", o.log_interval_s, NumberRule::non_negative());
  r.finish();
  return o;
}

DistributedConfig parse_distributed(ConfigReader& root) {
  DistributedConfig d;
  ConfigReader r = root.object("distributed");
  d.bucket_mb = r.number("bucket_mb", d.bucket_mb, NumberRule::positive());
  d.sync_batchnorm = r.boolean("sync_batchnorm", d.sync_batchnorm);
  d.broadcast_buffers = r.boolean("broadcast_buffers", d.broadcast_buffers);
  d.backend = r.choice("backend", d.backend, {"mpi", "nccl"});
  r.finish();
  return d;
}

// The typed recipe (nullopt when absent or null); its errors become usage errors under the key
// path "quant".
std::optional<quant::QuantRecipe> parse_quant(ConfigReader& root) {
  std::optional<nlohmann::json> raw = root.raw("quant");
  if (!raw) return std::nullopt;
  if (!raw->is_object())
    root.fail("quant",
              "must be a quantization recipe object {\"family\": ...} or {\"recipe\": ...} or "
              "null, got " +
                  ConfigReader::shown(*raw));
  try {
    return quant::QuantRecipe::from_json(*raw);
  } catch (const Error& e) {
    std::string message = e.what();
    const std::string prefix = "quant recipe: ";
    if (message.rfind(prefix, 0) == 0) message = message.substr(prefix.size());
    throw UsageError("quant: " + message);
  }
}

nlohmann::json null_if(bool unset, nlohmann::json v) {
  return unset ? nlohmann::json() : v;
}

}  // namespace

std::vector<std::string> model_names() {
  return nn::model_names();
}

TrainConfig parse_train_config(const nlohmann::json& json) {
  ConfigReader r(json, "");
  TrainConfig c;
  if (r.has("model") && json.at("model").is_object()) {
    ConfigReader m = r.object("model");
    c.onnx = m.string("onnx", "");
    if (c.onnx.empty())
      m.fail("onnx", "is required in a model object (\"model\": {\"onnx\": \"FILE.onnx\"})");
    m.finish();
    c.model = std::filesystem::path(c.onnx).stem().string();
    if (c.model.empty()) c.model = "onnx";
  } else {
    c.model = r.choice("model", c.model, model_names());
  }
  c.epochs = r.integer("epochs", c.epochs, 1, kMaxEpochs);
  c.batch_size = r.integer("batch_size", c.batch_size, 1, kMaxBatchSize);
  c.eval_batch_size = r.integer("eval_batch_size", c.eval_batch_size, 1, kMaxBatchSize);
  c.seed = r.integer("seed", c.seed, 0);
  c.device = r.string("device", c.device);
  if (c.device != "cpu" && c.device != "cuda" && c.device.rfind("cuda:", 0) != 0)
    r.fail("device", "must be \"cpu\", \"cuda\" or \"cuda:<index>\", got \"" + c.device + "\"");
  c.threads = r.integer("threads", 0, 1, kMaxThreads);
  c.deterministic = r.boolean("deterministic", c.deterministic);
  c.data = parse_data(r);
  c.optimizer = parse_optimizer(r);
  c.schedule = parse_schedule(r, c.epochs);
  c.grad_clip = r.number("grad_clip", 0.0, NumberRule::positive());
  c.label_smoothing = r.number("label_smoothing", 0.0, NumberRule::in_half_open(0, 1));
  c.nonfinite_loss = r.choice("nonfinite_loss", c.nonfinite_loss, {"stop", "continue"});
  c.output = parse_output(r);
  c.distributed = parse_distributed(r);
  c.resume = r.string("resume", "");
  c.pretrained = r.string("pretrained", "");
  c.quant = parse_quant(r);
  // The version and commit that `qgrad train` writes into a run's config.json: informational,
  // so a run's config.json can be passed back as --config.
  (void)r.raw("qgrad");
  r.finish();
  return c;
}

TrainConfig parse_train_config_text(const std::string& text, const std::string& source) {
  nlohmann::json json;
  try {
    json = parse_json(text, source);
  } catch (const IOError& e) {
    throw UsageError(e.what());  // a bad config is the user's to fix: exit status 2
  }
  try {
    return parse_train_config(json);
  } catch (const UsageError& e) {
    throw UsageError(source + ": " + e.what());
  }
}

namespace {

// The text of a config file. A regular file goes through read_file (directories, missing files
// and oversize files refused with the file named); a pipe such as `--config <(echo '{...}')` is
// read as a stream, up to the same bound.
std::string read_config_text(const std::string& path) {
  // A config is a few kilobytes; the bound keeps a wrong path (a dataset file) from being read.
  constexpr std::uint64_t kMaxConfigBytes = 16u << 20;
  const std::string op = "qgrad train: config file";
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st) || std::filesystem::is_regular_file(st) ||
      std::filesystem::is_directory(st))
    return read_file(path, op, kMaxConfigBytes);
  std::ifstream in(path, std::ios::binary);
  QGRAD_CHECK(in.good(), IOError, op, ": cannot open '", path, "'");
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    QGRAD_CHECK(text.size() <= kMaxConfigBytes, IOError, op, ": '", path, "' holds more than ",
                kMaxConfigBytes, " bytes");
  }
  QGRAD_CHECK(!in.bad(), IOError, op, ": error reading '", path, "'");
  return text;
}

}  // namespace

TrainConfig load_train_config(const std::string& path) {
  return parse_train_config_text(read_config_text(path), "config file '" + path + "'");
}

nlohmann::json to_json(const TrainConfig& c) {
  using nlohmann::json;
  json normalize = c.data.normalize.enabled
                       ? json{{"mean", c.data.normalize.mean}, {"std", c.data.normalize.std}}
                       : json(false);
  json optimizer{{"name", c.optimizer.name},
                 {"lr", c.optimizer.lr},
                 {"weight_decay", c.optimizer.weight_decay}};
  if (c.optimizer.name == "sgd") {
    optimizer["momentum"] = c.optimizer.momentum;
    optimizer["nesterov"] = c.optimizer.nesterov;
  } else {
    optimizer["betas"] = {c.optimizer.beta1, c.optimizer.beta2};
    optimizer["eps"] = c.optimizer.eps;
  }
  const ScheduleConfig& s = c.schedule;
  json schedule{{"name", s.name},
                {"warmup_epochs", s.warmup_epochs},
                {"warmup_steps", s.warmup_steps},
                {"warmup_start_factor", s.warmup_start_factor}};
  if (s.name == "step") schedule["step_size"] = s.step_size;
  if (s.name == "multistep") schedule["milestones"] = s.milestones;
  if (s.name == "step" || s.name == "multistep") schedule["gamma"] = s.gamma;
  if (s.name == "cosine") schedule["eta_min"] = s.eta_min;
  json data{{"format", c.data.format},
            {"dir", c.data.dir},
            {"prefetch", c.data.prefetch ? json(*c.data.prefetch) : json()},
            {"workers", c.data.workers},
            {"normalize", normalize},
            {"augment",
             {{"random_crop_padding", c.data.augment.random_crop_padding},
              {"hflip", c.data.augment.hflip}}}};
  if (c.data.format == "image_folder") {
    data["image_size"] = c.data.image_size;
    data["resize"] = c.data.resize;
    data["channels"] = c.data.channels;
    data["val_fraction"] = c.data.val_fraction;
    data["augment"]["random_resized_crop"] = c.data.augment.random_resized_crop;
  }
  if (c.data.format == "cifar100") data["label"] = c.data.label;
  if (c.data.format == "npy") {
    data["train_images"] = c.data.train_images;
    data["train_labels"] = c.data.train_labels;
    data["test_images"] = c.data.test_images;
    data["test_labels"] = c.data.test_labels;
    data["layout"] = c.data.layout;
    data["num_classes"] = c.data.num_classes;
  }
  return json{
      {"model", c.onnx.empty() ? json(c.model) : json{{"onnx", c.onnx}}},
      {"epochs", c.epochs},
      {"batch_size", c.batch_size},
      {"eval_batch_size", c.eval_batch_size},
      {"seed", c.seed},
      {"device", c.device},
      {"threads", null_if(c.threads == 0, c.threads)},
      {"deterministic", c.deterministic},
      {"data", data},
      {"optimizer", optimizer},
      {"schedule", schedule},
      {"grad_clip", null_if(c.grad_clip == 0, c.grad_clip)},
      {"label_smoothing", c.label_smoothing},
      {"nonfinite_loss", c.nonfinite_loss},
      {"output",
       {{"dir", null_if(c.output.dir.empty(), c.output.dir)},
        {"checkpoint_every", c.output.checkpoint_every},
        {"progress", c.output.progress},
        {"log_interval_s", c.output.log_interval_s}}},
      {"distributed",
       {{"bucket_mb", c.distributed.bucket_mb},
        {"sync_batchnorm", c.distributed.sync_batchnorm},
        {"broadcast_buffers", c.distributed.broadcast_buffers},
        {"backend", c.distributed.backend}}},
      {"resume", null_if(c.resume.empty(), c.resume)},
      {"pretrained", null_if(c.pretrained.empty(), c.pretrained)},
      {"quant", c.quant ? c.quant->to_json() : json()},
  };
}

const std::vector<ConfigKeyDoc>& train_config_keys() {
  static const std::vector<ConfigKeyDoc> keys{
      {"model", "\"lenet5bn\"",
       "\"lenet5bn\", \"vggfm\", \"resnet20\", \"resnet32\", \"resnet56\", \"resnet18\", "
       "\"resnet18_cifar\", \"mobilenet_v2\" or \"mobilenet_v2_cifar\"; or {\"onnx\": "
       "\"FILE.onnx\"}, a float CNN exported to ONNX (qgrad help import lists the operators), "
       "imported with its weights as the initialisation"},
      {"epochs", "3", "training epochs (integer in [1, 100000])"},
      {"batch_size", "128",
       "training batch size (integer in [1, 1e9]; a warning when larger than the training set, "
       "whose images then all go into one batch); under mpirun -np N, each rank's: the global "
       "batch is N x batch_size"},
      {"eval_batch_size", "1000", "batch size of the test-set evaluation (integer in [1, 1e9])"},
      {"seed", "0", "seeds the weights, the data order and the augmentation (integer >= 0)"},
      {"device", "\"cpu\"", "\"cpu\", \"cuda\" or \"cuda:<index>\" (\"cuda\" needs a CUDA build)"},
      {"deterministic", "false",
       "true: only bitwise-reproducible GPU algorithms (cuDNN), the same seed giving the same "
       "weights on the same GPU; slower"},
      {"threads", "all cores", "CPU threads (OpenMP; integer in [1, 4096])"},
      {"data.format", "\"mnist\"",
       "\"mnist\" (IDX files), \"cifar10\", \"cifar100\" (the binary versions), \"npy\" "
       "(NumPy arrays) or \"image_folder\" (JPEG / PNG files, a folder per class)"},
      {"data.dir",
       "\"/usr/share/datasets/fashion-mnist\" (mnist), required (cifar10, cifar100, "
       "image_folder), \".\" (npy)",
       "mnist: folder with the four IDX files ({train,t10k}-{images-idx3,labels-idx1}-ubyte"
       "[.gz]); cifar10: folder with data_batch_1..5.bin and test_batch.bin; cifar100: with "
       "train.bin and test.bin (or the folder holding the extracted archive); npy: folder the "
       "relative .npy paths start from; image_folder: one sub-folder of .jpg/.jpeg/.png files "
       "per class (sorted names give the labels), or train/ and val/ holding such folders"},
      {"data.label", "\"fine\"", "cifar100 only: \"fine\" (100 classes) or \"coarse\" (20)"},
      {"data.train_images", "required (npy)",
       "npy only: training images, uint8 (scaled to [0,1]) or float32 (as they are), [N,C,H,W], "
       "[N,H,W,C] or [N,H,W]"},
      {"data.train_labels", "required (npy)", "npy only: training labels [N], an integer dtype"},
      {"data.test_images", "required (npy)", "npy only: test images, as train_images"},
      {"data.test_labels", "required (npy)", "npy only: test labels, as train_labels"},
      {"data.layout", "\"nchw\"", "npy only: \"nchw\" or \"nhwc\" (4-d image arrays)"},
      {"data.num_classes", "10",
       "npy only: classes the model predicts; labels must lie in 0..num_classes-1 (at most "
       "100000)"},
      {"data.image_size", "224",
       "image_folder only: the model's input, height = width (training: RandomResizedCrop to it; "
       "evaluation: the centre crop)"},
      {"data.resize", "image_size x 256 / 224 (256 for 224)",
       "image_folder only: evaluation resizes the shorter side to this (bilinear, antialiased), "
       "then crops image_size; at least image_size"},
      {"data.channels", "3", "image_folder only: 3 (RGB) or 1 (grey), whatever the files hold"},
      {"data.val_fraction", "0.1",
       "image_folder only, without train/ and val/: the share of each class's images held out "
       "for evaluation (a fixed choice, whatever the seed)"},
      {"data.workers", "1",
       "threads preparing batches in the background (at most 256; > 1 turns prefetch on "
       "unless it is false)"},
      {"data.prefetch", "auto",
       "prepare batches on a background thread while training; auto = when a core is free "
       "beyond \"threads\""},
      {"data.normalize.mean",
       "0.2860 (mnist), [0.4914, 0.4822, 0.4465] (cifar10), [0.5071, 0.4865, 0.4409] (cifar100), "
       "[0.485, 0.456, 0.406] (image_folder; 0.449 with 1 channel), off (npy)",
       "per-channel mean (number or list), after scaling to [0,1]"},
      {"data.normalize.std",
       "0.3530 (mnist), [0.2470, 0.2435, 0.2616] (cifar10), [0.2673, 0.2564, 0.2762] (cifar100), "
       "[0.229, 0.224, 0.225] (image_folder; 0.226 with 1 channel)",
       "per-channel std; \"normalize\": false turns it off"},
      {"data.augment.random_crop_padding", "0",
       "zero-pad then randomly crop back; 0 = off (at most 1024)"},
      {"data.augment.hflip", "false", "random horizontal flips"},
      {"data.augment.random_resized_crop", "true (image_folder)",
       "image_folder only: training crops a random window (scale 0.08-1, ratio 3/4-4/3) resized "
       "to image_size; false = Resize + CenterCrop as evaluation"},
      {"optimizer.name", "\"sgd\"", "\"sgd\", \"adam\" or \"adamw\""},
      {"optimizer.lr", "0.05 (sgd), 0.001 (adam, adamw)", "learning rate"},
      {"optimizer.weight_decay", "5e-4 (sgd, adam), 0.01 (adamw)", "weight decay"},
      {"optimizer.momentum", "0.9", "sgd only"},
      {"optimizer.nesterov", "false", "sgd only"},
      {"optimizer.betas", "[0.9, 0.999]", "adam, adamw only"},
      {"optimizer.eps", "1e-8", "adam, adamw only"},
      {"schedule.name", "\"constant\"",
       "\"constant\", \"step\", \"multistep\" or \"cosine\" (stepped every batch)"},
      {"schedule.warmup_epochs", "0", "linear warm-up length in epochs (at most 100000)"},
      {"schedule.warmup_steps", "0",
       "linear warm-up length in batches (not with warmup_epochs; at most 1e9)"},
      {"schedule.warmup_start_factor", "0.1", "warm-up starts at lr * this factor"},
      {"schedule.step_size", "1",
       "step: epochs between decays by gamma (after the warm-up; at most 100000)"},
      {"schedule.milestones", "[epochs/2, 3*epochs/4]",
       "multistep: epochs (counted from the start, each at most 100000) at which lr *= gamma"},
      {"schedule.gamma", "0.1", "step, multistep: decay factor"},
      {"schedule.eta_min", "0", "cosine: final lr (the cosine spans the epochs after the warm-up)"},
      {"grad_clip", "off", "clip the total gradient norm to this value"},
      {"label_smoothing", "0", "cross-entropy label smoothing in [0, 1)"},
      {"nonfinite_loss", "\"stop\"",
       "a nan/inf training loss: \"stop\" ends the run with an error (exit status 1) naming "
       "the epoch and step; \"continue\" trains on (a non-finite epoch never becomes best)"},
      {"output.dir", "runs/<model>-<timestamp>",
       "where metrics.jsonl, config.json and checkpoints go (resume: the checkpoint's folder)"},
      {"output.checkpoint_every", "0",
       "also keep epoch_<N>.safetensors every N epochs (last and best are always written; at most "
       "100000)"},
      {"output.progress", "\"auto\"",
       "\"bar\" (terminal), \"lines\" (periodic lines), \"off\"; auto = bar on a terminal"},
      {"output.log_interval_s", "10", "seconds between progress lines"},
      {"distributed.bucket_mb", "1",
       "mpirun -np N: MiB of gradients per all-reduce bucket (smaller buckets start earlier in "
       "backward)"},
      {"distributed.sync_batchnorm", "false",
       "mpirun -np N: batch norm with the statistics of the global batch (SyncBatchNorm) instead "
       "of each rank's own"},
      {"distributed.backend", "\"mpi\"",
       "mpirun -np N on GPUs: \"mpi\" stages the gradients through host memory (any machine, also "
       "ranks sharing a GPU), \"nccl\" all-reduces them on the GPUs (one rank per GPU; builds "
       "with NCCL)"},
      {"distributed.broadcast_buffers", "true",
       "mpirun -np N: copy rank 0's buffers (batch norm's running statistics) to every rank after "
       "each step"},
      {"resume", "none", "checkpoint to continue from (exactly, same results as no interruption)"},
      {"pretrained", "none",
       "safetensors file (qgrad checkpoint or plain state dict) with float weights to start from "
       "(then quantized when \"quant\" is set); ignored when resuming"},
      {"quant", "null (float)",
       "quantization-aware training recipe (object; keys below, each family's quantizer fields "
       "in quant/modules/quant_recipe.h)"},
      {"quant.recipe", "none",
       "a named recipe (`qgrad recipes` lists them, e.g. \"lsq_w4a4\"); the other quant keys "
       "given override its values, objects merged key by key"},
      {"quant.family", "required",
       "\"nvidia\", \"torch_ao\", \"lsq\", \"pact\", \"horizon\" or \"aimet\" (quantizer "
       "family); "
       "optional with quant.recipe"},
      {"quant.weight", "family default",
       "Conv2d/Linear weight quantizer: an object of the family's fields replacing the default "
       "as a whole; null = float weights. torch_ao's defaults (weight and input) are PyTorch "
       "1.13's get_default_qat_qconfig(\"fbgemm\"): observer \"fused_moving_average_minmax\", "
       "qint8 per_channel_symmetric weights, quint8 per_tensor_affine inputs with reduce_range"},
      {"quant.input", "family default",
       "Conv2d/Linear (and residual add) input quantizer, per tensor; null = float inputs"},
      {"quant.add", "true", "quantize both inputs of residual adds (resnet20)"},
      {"quant.fuse_bn", "false",
       "train each Conv2d + BatchNorm2d pair as one QuantConvBn2d quantizing the folded weight "
       "(torch.ao ConvBn2d)"},
      {"quant.bias", "\"float\"",
       "\"int32\": fake quantize each quantized Conv2d/Linear bias onto the int32 grid "
       "s_in * s_w that integer runtimes add (ONNX Runtime rounds a float bias so); needs "
       "fuse_bn false"},
      {"quant.layers", "none",
       "per-layer overrides: {\"pattern\": {\"weight\": {...} | null, \"input\": {...} | "
       "null}} with globs over module names, exact names, \"@first\" / \"@last\" (first / last "
       "Conv2d or Linear); objects merge over the layer's settings, null = float; the most "
       "specific pattern wins, or a list [{\"match\": ..., ...}] applied in order (last wins)"},
      {"quant.exclude", "[]", "module names kept float, e.g. [\"0\", \"13\"]"},
      {"quant.calibration.batches", "8 (nvidia, horizon, aimet), 0 (torch_ao, lsq, pact)",
       "training batches (normalised, no augmentation, at most 1000000) run to calibrate before "
       "training; not when resuming"},
      {"quant.calibration.method", "\"entropy\"",
       "nvidia histogram calibrators: \"entropy\", \"mse\" or \"percentile\""},
      {"quant.calibration.percentile", "99.99", "percentile method: the percentile in (0, 100]"},
      {"quant.calibration.start_bin", "128", "entropy and mse methods: first candidate bin"},
      {"quant.calibration.stride", "1", "entropy and mse methods: step between candidate bins"},
      {"quant.calibration.strict", "true", "a quantizer that saw no calibration data is an error"},
      {"qgrad", "(written)",
       "{\"version\", \"commit\"} of the qgrad that wrote a run's config.json; ignored on input"},
  };
  return keys;
}

std::string train_config_help() {
  std::size_t w_path = 0, w_default = 0;
  for (const ConfigKeyDoc& k : train_config_keys()) {
    w_path = std::max(w_path, k.path.size());
    w_default = std::max(w_default, k.fallback.size());
  }
  w_default = std::min<std::size_t>(w_default, 24);
  std::ostringstream os;
  os << "  " << std::string("key") + std::string(w_path - 3 + 2, ' ') << "default"
     << std::string(w_default - 7 + 2, ' ') << "meaning\n";
  for (const ConfigKeyDoc& k : train_config_keys()) {
    os << "  " << k.path << std::string(w_path - k.path.size() + 2, ' ') << k.fallback;
    if (k.fallback.size() > w_default)
      os << "\n  " << std::string(w_path + 2 + w_default + 2, ' ');
    else
      os << std::string(w_default - k.fallback.size() + 2, ' ');
    os << k.meaning << "\n";
  }
  return os.str();
}

}  // namespace qgrad::cli
