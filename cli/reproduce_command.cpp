// `qgrad reproduce`: the cells' runs (training, PTQ, QAT fine-tuning), their resumable run
// folders, and results.json / results.md / the pictures.
#include "cli/reproduce_command.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>

#include "cli/command_options.h"
#include "cli/device_option.h"
#include "cli/interrupted.h"
#include "cli/plot_command.h"
#include "cli/ptq_command.h"
#include "cli/ptq_recipe.h"
#include "cli/reproduce_cells.h"
#include "cli/train_command.h"
#include "cli/train_config.h"
#include "cli/usage_error.h"
#include "core/file_io.h"
#include "core/json_parse.h"

namespace qgrad::cli {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr const char* kCellFile = "cell.json";

bool is_cifar(const ReproduceOptions& o) {
  return o.dataset == "cifar10" || o.dataset == "cifar100";
}

// The training config's "data": Fashion-MNIST as train reads it by default; CIFAR in its binary
// format with the usual augmentation (random crop with padding 4, horizontal flips).
json data_json(const ReproduceOptions& o) {
  json d = json::object();
  if (is_cifar(o))
    d = {{"format", o.dataset}, {"augment", {{"random_crop_padding", 4}, {"hflip", true}}}};
  if (!o.data_dir.empty()) d["dir"] = o.data_dir;
  return d;
}

// The published CIFAR-10 ResNet-20 anchors (APoT, Li et al. 2020: FP 92.96, 4-bit 92.45, 3-bit
// 92.49, 2-bit 90.96) for the FP32 row and the QAT rows of equal weight and activation bits.
std::string cifar10_anchor(const ReproduceCell& cell) {
  if (cell.method == "float") return "92.96 (APoT FP)";
  if (cell.method != "qat" || !cell.weight_bits || cell.weight_bits != cell.act_bits) return "";
  switch (*cell.weight_bits) {
    case 4:
      return "92.45 (APoT 4-bit)";
    case 3:
      return "92.49 (APoT 3-bit)";
    case 2:
      return "90.96 (APoT 2-bit)";
    default:
      return "";
  }
}

std::string dataset_title(const std::string& dataset) {
  if (dataset == "cifar10") return "CIFAR-10";
  if (dataset == "cifar100") return "CIFAR-100";
  return "Fashion-MNIST";
}

// The settings a finished cell was run with; a later run with other settings must not reuse it.
json cell_settings(const ReproduceOptions& o, const ReproduceCell& cell) {
  // The data too, as an absolute path: a cell trained on other images is not this table's.
  const std::string data = o.data_dir.empty() ? DataConfig().dir : o.data_dir;
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(fs::absolute(data), ec);
  json s = {{"batch_size", o.batch_size}, {"data_dir", ec ? data : canonical.string()}};
  if (o.dataset != "fashion-mnist") s["dataset"] = o.dataset;  // older records stay valid
  if (cell.method == "float") s["epochs"] = o.epochs;
  if (cell.method == "qat") s["epochs"] = o.qat_epochs;
  if (cell.method == "ptq") s["calibration_batches"] = o.calibration_batches;
  if (cell.method != "float") s["float_epochs"] = o.epochs;
  if (!cell.quant.is_null()) s["quant"] = cell.quant;
  if (!cell.ptq_method.empty()) s["ptq_method"] = cell.ptq_method;
  // Another device gives other float rounding (older records, all on the CPU, stay valid).
  if (o.device != "cpu") s["device"] = o.device;
  return s;
}

// A finished cell's accuracy (and its run time added to `time_s`), or NaN when the cell has not
// finished (no cell.json). A cell.json of other settings is a usage error: its folder belongs to
// another experiment.
double finished_accuracy(const fs::path& dir, const json& settings, double& time_s) {
  const fs::path file = dir / kCellFile;
  if (!fs::exists(file)) return std::nan("");
  const json j = parse_json(read_file(file.string(), "reproduce", 1 << 20), file.string());
  if (!j.is_object() || !j.contains("accuracy") || !j.at("accuracy").is_number() ||
      !j.contains("settings"))
    throw IOError("reproduce: '" + file.string() + "' is not a finished cell's record");
  if (j.at("settings") != settings)
    throw UsageError("reproduce: '" + dir.string() + "' was run with other settings (" +
                     j.at("settings").dump() + ", now " + settings.dump() +
                     "); give another --out or remove that folder");
  if (j.contains("time_s") && j.at("time_s").is_number()) time_s += j.at("time_s").get<double>();
  return j.at("accuracy").get<double>();
}

void write_cell(const fs::path& dir, const ReproduceCell& cell, const json& settings,
                double accuracy, double time_s) {
  const json j = {{"cell", cell.id},
                  {"method", cell.method},
                  {"settings", settings},
                  {"accuracy", accuracy},
                  {"time_s", time_s}};
  write_file_atomic((dir / kCellFile).string(), j.dump(2) + "\n");
}

json train_config_json(const ReproduceOptions& o, const std::string& model, std::int64_t seed,
                       const fs::path& dir) {
  json c = {{"model", model},
            {"seed", seed},
            {"batch_size", o.batch_size},
            {"optimizer", {{"name", "sgd"}, {"momentum", 0.9}, {"weight_decay", 5e-4}}},
            {"schedule", {{"name", "cosine"}}},
            {"output", {{"dir", dir.string()}, {"progress", "off"}}}};
  if (o.threads > 0) c["threads"] = o.threads;
  if (o.device != "cpu") c["device"] = o.device;
  if (const json d = data_json(o); !d.empty()) c["data"] = d;
  // An unfinished run goes on from where it stopped.
  if (fs::exists(dir / "last.safetensors")) c["resume"] = (dir / "last.safetensors").string();
  return c;
}

// --device: every selected cell's quantizers run there (as train and ptq check them) and the
// device is visible, before any cell runs; a UsageError naming the cell otherwise.
void require_cells_run_on(const ReproduceOptions& o, const std::vector<ReproduceCell>& cells) {
  const std::string what = "reproduce: --device " + o.device;
  const Device device = parse_device("reproduce: --device", o.device);
  if (device.is_cpu()) return;
  for (const std::string& model : o.models) {
    const TrainConfig config = parse_train_config(train_config_json(o, model, 0, o.out));
    for (const ReproduceCell& cell : cells) {
      if (cell.quant.is_null()) continue;
      PtqRecipeOptions r;
      r.command = "reproduce";
      r.recipe = cell.quant.dump();
      r.method = cell.ptq_method;
      const quant::QuantRecipe recipe =
          cell.method == "ptq" ? ptq_recipe(r) : quant::QuantRecipe::from_json(cell.quant);
      require_recipe_runs_on(what + " (cell " + cell.id + ", " + model + ")", device, config,
                             recipe);
    }
  }
  require_visible(what, device);
}

// Runs one cell into `dir` (its log in dir/log.txt) and returns its test accuracy.
double run_cell(const ReproduceOptions& o, const ReproduceCell& cell, const std::string& model,
                std::int64_t seed, const fs::path& dir, const fs::path& float_dir) {
  fs::create_directories(dir);
  std::ofstream log(dir / "log.txt", std::ios::app);
  if (cell.method == "ptq") {
    PtqOptions p;
    p.source.checkpoint = (float_dir / "last.safetensors").string();
    p.recipe.recipe = cell.quant.dump();
    p.recipe.method = cell.ptq_method;
    p.recipe.calibration_batches = o.calibration_batches;
    p.out = (dir / "ptq.safetensors").string();
    p.source.data_dir = o.data_dir;
    p.source.batch_size = o.batch_size;
    p.source.threads = o.threads;
    p.device = o.device;
    return run_ptq(p, log).quantized.accuracy;
  }
  json c = train_config_json(o, model, seed, dir);
  if (cell.method == "float") {
    c["epochs"] = o.epochs;
    c["optimizer"]["lr"] = 0.05;
  } else {
    // QAT fine-tunes the FP32 weights at a tenth of the learning rate, as LSQ fine-tunes.
    c["epochs"] = o.qat_epochs;
    c["optimizer"]["lr"] = 0.005;
    c["quant"] = cell.quant;
    c["pretrained"] = (float_dir / "last.safetensors").string();
  }
  const TrainOutcome r = run_training(parse_train_config(c), log, o.stop_training);
  if (r.interrupted)
    throw Interrupted("reproduce: interrupted in " + dir.string() +
                      " (start the same command again to resume)");
  return r.epochs.back().test_acc;
}

std::string percent(double mean, double sd, std::size_t n) {
  if (std::isnan(mean)) return "diverged";
  char b[64];
  if (n > 1)
    std::snprintf(b, sizeof b, "%.2f ± %.2f", 100 * mean, 100 * sd);
  else
    std::snprintf(b, sizeof b, "%.2f", 100 * mean);
  return b;
}

std::string results_markdown(const ReproduceOptions& o, const std::vector<ReproduceCell>& cells,
                             const ResultsFile& results, double total_s,
                             const std::string& command) {
  std::ostringstream md;
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  md << "# qgrad reproduce: " << dataset_title(o.dataset) << "\n\n";
  md << "`" << command << "`, " << date << ". FP32: " << o.epochs
     << " epochs (SGD, lr 0.05, cosine); QAT: " << o.qat_epochs
     << " epochs fine-tuning the FP32 weights (lr 0.005, cosine); PTQ: " << o.calibration_batches
     << " calibration batches of " << o.batch_size << ". Seeds: ";
  for (std::size_t i = 0; i < o.seeds.size(); ++i) md << (i ? ", " : "") << o.seeds[i];
  md << ". Test accuracy (%) after the last epoch, mean ± standard deviation over the seeds; "
        "(Δ) is the difference to FP32 in points. Compute time of all the cells (wall clock, "
        "summed over the runs that made them): "
     << static_cast<long long>(std::lround(total_s)) << " s.\n\n";
  md << "| Setting |";
  for (const std::string& m : o.models) md << " " << m << " |";
  md << " Paper (ImageNet ResNet-18) |";
  if (o.dataset == "cifar10") md << " Published (CIFAR-10 ResNet-20) |";
  md << "\n|---|";
  for (std::size_t i = 0; i < o.models.size(); ++i) md << "---|";
  md << (o.dataset == "cifar10" ? "---|---|\n" : "---|\n");
  for (const ReproduceCell& cell : cells) {
    md << "| " << cell.label << " |";
    for (const std::string& m : o.models) {
      const ResultCell* found = nullptr;
      const ResultCell* fp = nullptr;
      for (const ResultCell& r : results.cells) {
        if (r.model != m) continue;
        if (r.method == cell.method && r.recipe.value_or("") == cell.recipe) found = &r;
        if (r.method == "float") fp = &r;
      }
      if (cell.method.empty()) {
        md << " not run |";
      } else if (found == nullptr) {
        md << " – |";
      } else {
        md << " " << percent(found->mean, found->stddev, found->seeds.size());
        if (fp != nullptr && found != fp && !std::isnan(found->mean) && !std::isnan(fp->mean)) {
          char d[32];
          std::snprintf(d, sizeof d, " (%+.2f)", 100 * (found->mean - fp->mean));
          md << d;
        }
        md << " |";
      }
    }
    md << " " << (cell.paper.empty() ? "" : cell.paper) << " |";
    if (o.dataset == "cifar10") md << " " << cifar10_anchor(cell) << " |";
    md << "\n";
  }
  md << "\nThe paper column is ImageNet ResNet-18 top-1 as the LSQ paper (Esser et al. 2020) and "
        "the PACT paper (Choi et al. 2018; W2A2: 64.4) report it: a different dataset and "
        "model, for the trend only.\n";
  if (o.dataset == "cifar10")
    md << "\nThe published CIFAR-10 column is ResNet-20 as APoT (Li et al. 2020) reports it (its "
          "own quantizer, 200 epochs from scratch): an anchor to compare with, not a value this "
          "recipe is expected to match.\n";
  for (const ReproduceCell& cell : cells)
    if (cell.method.empty()) md << "\n" << cell.label << ": " << cell.not_run_why << ".\n";
  return md.str();
}

std::vector<std::string> split_list(const std::string& option, const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    out.push_back(
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (out.back().empty())
      throw UsageError("reproduce: " + option + " must be a comma-separated list, got '" + text +
                       "'");
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

ResultsFile run_reproduce(const ReproduceOptions& o, std::ostream& out) {
  if (o.dataset != "fashion-mnist" && !is_cifar(o))
    throw UsageError("reproduce: --dataset must be fashion-mnist, cifar10 or cifar100, got '" +
                     o.dataset + "'");
  if (is_cifar(o) && o.data_dir.empty())
    throw UsageError("reproduce: --dataset " + o.dataset +
                     " needs --data-dir (the folder of the binary version's .bin files)");
  const std::vector<std::string> known = model_names();
  for (auto m = o.models.begin(); m != o.models.end(); ++m) {
    if (std::find(known.begin(), known.end(), *m) == known.end())
      throw UsageError("reproduce: --models: unknown model '" + *m + "'");
    // A model named twice would train twice into one folder and fill two columns of the table.
    if (std::find(o.models.begin(), m, *m) != m)
      throw UsageError("reproduce: --models names '" + *m + "' twice");
  }
  std::vector<ReproduceCell> cells = select_cells(o.cells);
  // Every other cell starts from the FP32 model, so FP32 is always run.
  if (std::none_of(cells.begin(), cells.end(), [](const auto& c) { return c.method == "float"; }))
    cells.insert(cells.begin(), reproduce_cells().front());
  require_cells_run_on(o, cells);
  const fs::path root(o.out);
  fs::create_directories(root);

  ResultsFile results;
  results.dataset = o.dataset;
  double total_s = 0;
  for (const std::string& model : o.models) {
    for (const ReproduceCell& cell : cells) {
      if (cell.method.empty()) continue;
      ResultCell rc;
      rc.model = model;
      rc.method = cell.method;
      if (!cell.recipe.empty()) rc.recipe = cell.recipe;
      if (!cell.family.empty()) rc.family = cell.family;
      rc.weight_bits = cell.weight_bits;
      rc.act_bits = cell.act_bits;
      for (std::int64_t seed : o.seeds) {
        const fs::path seed_dir = root / model / ("seed" + std::to_string(seed));
        const fs::path dir = seed_dir / cell.id;
        const json settings = cell_settings(o, cell);
        double acc = finished_accuracy(dir, settings, total_s);
        if (!std::isnan(acc)) {
          out << model << " seed " << seed << " " << cell.id << ": done before, "
              << percent(acc, 0, 1) << "%\n";
        } else {
          const auto start = std::chrono::steady_clock::now();
          out << model << " seed " << seed << " " << cell.id << " ... " << std::flush;
          try {
            acc = run_cell(o, cell, model, seed, dir, seed_dir / "fp32");
          } catch (const TrainingDiverged& e) {
            acc = std::nan("");  // a diverged cell is a result (null), not the end of the table
            out << "diverged (" << e.what() << ") ";
          }
          const double t =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          total_s += t;
          if (!std::isnan(acc)) write_cell(dir, cell, settings, acc, t);
          out << percent(acc, 0, 1) << "% (" << static_cast<long long>(std::lround(t)) << " s)\n"
              << std::flush;
        }
        rc.seeds.push_back(seed);
        rc.accuracy.push_back(acc);
      }
      std::tie(rc.mean, rc.stddev) = mean_and_std(rc.accuracy);
      results.cells.push_back(std::move(rc));
    }
  }
  std::string command = "qgrad reproduce ";
  if (o.dataset != "fashion-mnist") command += "--dataset " + o.dataset + " ";
  command += "--models ";
  for (std::size_t i = 0; i < o.models.size(); ++i) command += (i ? "," : "") + o.models[i];
  command += " --seeds ";
  for (std::size_t i = 0; i < o.seeds.size(); ++i)
    command += (i ? "," : "") + std::to_string(o.seeds[i]);
  command +=
      " --epochs " + std::to_string(o.epochs) + " --qat-epochs " + std::to_string(o.qat_epochs);
  if (o.cells != "all") command += " --cells " + o.cells;
  write_file_atomic((root / "results.json").string(), results_to_json(results).dump(2) + "\n");
  write_file_atomic((root / "results.md").string(),
                    results_markdown(o, select_cells(o.cells), results, total_s, command));
  out << "wrote " << (root / "results.json").string() << " and " << (root / "results.md").string()
      << "\n";
  if (o.plots) {
    // Accuracy against bit width, and the training curves of the first model and seed.
    std::vector<std::string> args{(root / "results.json").string()};
    const fs::path first = root / o.models.front() / ("seed" + std::to_string(o.seeds.front()));
    for (const ReproduceCell& cell : cells)
      if (cell.method == "float" || cell.method == "qat")
        args.push_back((first / cell.id).string());
    args.insert(args.end(), {"--out", root.string()});
    std::ostringstream plot_out;
    try {
      plot_command(args, plot_out);
      out << plot_out.str();
    } catch (const std::exception& e) {
      // The tables are written; a missing matplotlib only costs the pictures.
      out << "reproduce: no pictures: " << e.what() << "\n";
    }
  }
  return results;
}

std::string reproduce_usage() {
  std::string ids;
  for (const ReproduceCell& c : reproduce_cells()) ids += (ids.empty() ? "" : ", ") + c.id;
  return "usage: qgrad reproduce [--models M,...] [--seeds S,...] [--epochs E] [--qat-epochs E]\n"
         "                       [--cells ID,...] [--quick] [--out DIR] [--dataset D]\n"
         "                       [--data-dir DIR]\n"
         "                       [--threads N] [--batch-size N] [--calibration-batches N]\n"
         "                       [--device D] [--no-plots]\n"
         "\n"
         "Trains FP32 models, quantizes them post-training and fine-tunes them with QAT recipes,\n"
         "and writes the paper table: DIR/results.md, DIR/results.json and pictures. Every cell\n"
         "is its own run folder DIR/<model>/seed<S>/<cell>; started again, reproduce skips the\n"
         "finished cells and resumes an unfinished training.\n"
         "\n"
         "  --models M,...     zoo models (default lenet5bn,vggfm,resnet20)\n"
         "  --seeds S,...      training seeds (default 0,1,2)\n"
         "  --epochs E         FP32 training epochs (default 15)\n"
         "  --qat-epochs E     QAT fine-tuning epochs from the FP32 weights (default 5)\n"
         "  --cells ID,...     the rows to run (default all): " +
         ids +
         "\n"
         "  --quick            lenet5bn, seed 0, 2 FP32 epochs, 1 QAT epoch (unless given)\n"
         "  --out DIR          output folder (default reproduce)\n"
         "  --dataset D        fashion-mnist (default), cifar10 or cifar100 (the binary\n"
         "                     versions, random crops and flips; needs --data-dir)\n"
         "  --data-dir DIR     the dataset's folder (default: train's Fashion-MNIST folder)\n"
         "  --threads N        CPU threads (default: all cores)\n"
         "  --batch-size N     training and calibration batch size (default 128)\n"
         "  --calibration-batches N  PTQ calibration batches (default 8)\n"
         "  --device D         cpu (default), cuda or cuda:N: where every cell trains and\n"
         "                     calibrates (each cell's quantizers must run there: checked\n"
         "                     before any cell runs)\n"
         "  --no-plots         skip the pictures\n"
         "\n"
         "exit status: 0 done, 1 error, 2 bad usage\n";
}

int reproduce_command(const std::vector<std::string>& args, std::ostream& out) {
  const auto options = parse_command_options(
      "reproduce", args,
      {"--models", "--seeds", "--epochs", "--qat-epochs", "--cells", "--out", "--dataset",
       "--data-dir", "--threads", "--batch-size", "--calibration-batches", "--device"},
      nullptr, {"--quick", "--no-plots"});
  if (!options) {
    out << reproduce_usage();
    return 0;
  }
  ReproduceOptions o;
  bool quick = false, models_given = false, seeds_given = false, epochs_given = false,
       qat_given = false;
  for (const auto& [name, value] : *options) {
    if (name == "--quick") quick = true;
    if (name == "--no-plots") o.plots = false;
    if (name == "--models") {
      o.models = split_list(name, value);
      models_given = true;
    }
    if (name == "--seeds") {
      o.seeds.clear();
      for (const std::string& s : split_list(name, value))
        o.seeds.push_back(parse_int_option("reproduce", name, s, 0, std::int64_t{1} << 62));
      for (std::size_t i = 1; i < o.seeds.size(); ++i)
        if (o.seeds[i] <= o.seeds[i - 1])
          throw UsageError("reproduce: --seeds must be strictly increasing, got '" + value + "'");
      seeds_given = true;
    }
    if (name == "--epochs") {
      o.epochs = parse_int_option("reproduce", name, value, 1, 100000);
      epochs_given = true;
    }
    if (name == "--qat-epochs") {
      o.qat_epochs = parse_int_option("reproduce", name, value, 1, 100000);
      qat_given = true;
    }
    if (name == "--cells") o.cells = value;
    if (name == "--out") o.out = value;
    if (name == "--data-dir") o.data_dir = value;
    if (name == "--dataset") o.dataset = value;
    if (name == "--threads") o.threads = parse_int_option("reproduce", name, value, 1, 4096);
    if (name == "--batch-size")
      o.batch_size = parse_int_option("reproduce", name, value, 1, 1 << 20);
    if (name == "--calibration-batches")
      o.calibration_batches = parse_int_option("reproduce", name, value, 1, 1000000);
    if (name == "--device") {
      parse_device("reproduce: --device", value);  // a bad name is a usage error before any work
      o.device = value;
    }
  }
  if (quick) {
    if (!models_given) o.models = {"lenet5bn"};
    if (!seeds_given) o.seeds = {0};
    if (!epochs_given) o.epochs = 2;
    if (!qat_given) o.qat_epochs = 1;
  }
  select_cells(o.cells);  // an unknown id is a usage error before anything runs
  run_reproduce(o, out);
  return 0;
}

}  // namespace qgrad::cli
