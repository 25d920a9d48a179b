// `qgrad plot`: argument checks, reading the run folders and result files into one plot spec,
// and running the matplotlib script on it.
#include "cli/plot_command.h"

#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <ostream>

#include "cli/command_options.h"
#include "cli/metrics_log.h"
#include "cli/results_file.h"
#include "cli/sensitivity_file.h"
#include "cli/usage_error.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/json_parse.h"
#include "core/subprocess.h"

namespace qgrad::cli {

namespace fs = std::filesystem;

namespace {

// The script's exit status when matplotlib cannot be imported (cli/plot_runs.py).
constexpr int kNoMatplotlibStatus = 3;
// results.json and sensitivity.json hold a few hundred cells or layers; far beyond any real file.
constexpr std::uint64_t kMaxResultBytes = 64u << 20;

struct RunCurves {
  std::string path;         // as given
  std::string label;        // the folder name
  std::string description;  // "lenet5bn, float" from config.json; empty when unknown
  std::vector<EpochMetrics> epochs;
};

struct PlotInputs {
  std::vector<RunCurves> runs;
  ResultsFile results;  // the cells of every results.json
  std::vector<std::string> datasets;
  bool has_results = false;
  std::string sensitivity_path;
  SensitivityFile sensitivity;
};

nlohmann::json nullable(double v) {
  return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v);
}

// "runs/a/" -> "a"; "." -> the current folder's name.
std::string folder_name(const std::string& path) {
  fs::path p = fs::path(path).lexically_normal();
  if (p.has_filename() && p.filename() != ".") return p.filename().string();
  p = fs::weakly_canonical(fs::absolute(p));
  return p.filename().empty() ? path : p.filename().string();
}

// What the run trained, from its config.json ("lenet5bn, QAT torch_ao"); empty when the file is
// missing or not what qgrad train writes (the curves do not depend on it).
std::string run_description(const std::string& folder, std::ostream& out) {
  const std::string path = (fs::path(folder) / "config.json").string();
  if (!fs::exists(path)) return "";
  try {
    const nlohmann::json c = parse_json(read_file(path, "run config", kMaxResultBytes), path);
    const auto m = c.find("model");
    const std::string model = m != c.end() && m->is_object()
                                  ? m->value("onnx", std::string("?"))  // an imported model
                                  : c.value("model", std::string("?"));
    const auto quant = c.find("quant");
    if (quant == c.end() || quant->is_null()) return model + ", float";
    return model + ", QAT " + quant->value("family", std::string("?"));
  } catch (const std::exception& e) {
    out << "qgrad plot: warning: " << e.what() << " (labelled by folder name only)\n";
    return "";
  }
}

void add_run(PlotInputs& inputs, const std::string& path, std::ostream& out) {
  const std::string metrics = (fs::path(path) / "metrics.jsonl").string();
  if (!fs::is_regular_file(metrics))
    throw UsageError("plot: '" + path +
                     "' is a folder without metrics.jsonl (expected a run folder of qgrad train)");
  std::string warning;
  RunCurves run{path, folder_name(path), run_description(path, out),
                MetricsLog::read(metrics, &warning)};
  if (!warning.empty()) out << "qgrad plot: warning: " << warning << "\n";
  if (run.epochs.empty()) {
    // A run that has not finished its first epoch yet: nothing to draw, but not an error.
    out << "qgrad plot: warning: '" << metrics << "' has no epochs yet; run skipped\n";
    return;
  }
  inputs.runs.push_back(std::move(run));
}

void add_file(PlotInputs& inputs, const std::string& path) {
  const nlohmann::json j = parse_json(read_file(path, "plot input", kMaxResultBytes), path);
  const auto schema = j.is_object() ? j.find("schema") : j.end();
  const std::string name =
      schema != j.end() && schema->is_string() ? schema->get<std::string>() : "";
  try {
    if (name == kResultsSchema) {
      ResultsFile r = results_from_json(j);
      for (ResultCell& c : r.cells) inputs.results.cells.push_back(std::move(c));
      if (!r.dataset.empty()) inputs.datasets.push_back(r.dataset);
      inputs.has_results = true;
      return;
    }
    if (name == kSensitivitySchema) {
      if (!inputs.sensitivity_path.empty())
        throw UsageError("one sensitivity.json at a time (also given '" + inputs.sensitivity_path +
                         "')");
      inputs.sensitivity = sensitivity_from_json(j);
      inputs.sensitivity_path = path;
      return;
    }
  } catch (const UsageError& e) {
    throw UsageError("plot: '" + path + "': " + e.what());
  }
  throw UsageError("plot: '" + path + "' is neither a results.json nor a sensitivity.json (its " +
                   "\"schema\" must be \"" + kResultsSchema + "\" or \"" + kSensitivitySchema +
                   "\", got " + (schema == j.end() ? std::string("none") : describe_json(*schema)) +
                   "; see docs/results_format.md)");
}

nlohmann::json plot_spec(const PlotInputs& inputs, const std::string& out_dir,
                         const std::string& format) {
  nlohmann::json spec = {{"format", format}, {"out_dir", out_dir}};
  // Two runs with the same folder name (runs1/a, runs2/a) are labelled by the paths given.
  std::map<std::string, int> label_count;
  for (const RunCurves& r : inputs.runs) ++label_count[r.label];
  nlohmann::json runs = nlohmann::json::array();
  for (const RunCurves& r : inputs.runs) {
    nlohmann::json epoch = nlohmann::json::array(), loss = epoch, acc = epoch;
    for (const EpochMetrics& m : r.epochs) {
      epoch.push_back(m.epoch);
      loss.push_back(nullable(m.train_loss));
      acc.push_back(nullable(m.test_acc));
    }
    runs.push_back({{"label", label_count[r.label] > 1 ? r.path : r.label},
                    {"description", r.description},
                    {"epoch", epoch},
                    {"train_loss", loss},
                    {"test_acc", acc}});
  }
  spec["runs"] = runs;
  if (inputs.has_results) {
    ResultsFile merged = inputs.results;
    for (const std::string& d : inputs.datasets)
      if (merged.dataset.find(d) == std::string::npos)
        merged.dataset += (merged.dataset.empty() ? "" : ", ") + d;
    spec["results"] = results_to_json(merged);
  }
  if (!inputs.sensitivity_path.empty())
    spec["sensitivity"] = sensitivity_to_json(inputs.sensitivity);
  return spec;
}

// The spec file for the script: in the temp folder, removed when the command ends.
class SpecFile {
 public:
  explicit SpecFile(const std::string& text) {
    std::string tmpl = (fs::temp_directory_path() / "qgrad_plot_XXXXXX.json").string();
    const int fd = mkstemps(tmpl.data(), 5);
    QGRAD_CHECK(fd >= 0, IOError, "plot: cannot create a temporary file in ",
                fs::temp_directory_path().string());
    path_ = tmpl;
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = write(fd, text.data() + done, text.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    close(fd);
    QGRAD_CHECK(done == text.size(), IOError, "plot: cannot write the temporary file ", path_);
  }
  ~SpecFile() {
    std::error_code ec;
    fs::remove(path_, ec);
  }
  SpecFile(const SpecFile&) = delete;
  SpecFile& operator=(const SpecFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string python_program() {
  const char* env = std::getenv("QGRAD_PYTHON");
  if (env == nullptr) return "/usr/bin/python3";
  if (*env == '\0')
    throw UsageError("plot: QGRAD_PYTHON is set but empty (unset it for /usr/bin/python3)");
  return env;
}

}  // namespace

std::string plot_script_path() {
  std::vector<std::string> candidates;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    candidates.push_back((exe.parent_path().parent_path() / "share/qgrad/plot_runs.py").string());
  candidates.push_back(QGRAD_PLOT_SCRIPT_SOURCE);
  std::string tried;
  for (const std::string& c : candidates) {
    if (fs::is_regular_file(c)) return c;
    tried += (tried.empty() ? "" : ", ") + c;
  }
  throw Error("plot: the drawing script plot_runs.py is missing (looked for " + tried +
              "); reinstall qgrad or build it from a complete source tree");
}

std::string plot_usage() {
  return "usage: qgrad plot INPUT... [--out DIR] [--format png|svg]\n"
         "\n"
         "Draws with matplotlib (Debian's python3-matplotlib, run by /usr/bin/python3 or\n"
         "$QGRAD_PYTHON). Each INPUT is one of:\n"
         "  a run folder of qgrad train   its metrics.jsonl: train loss and test accuracy per\n"
         "                                epoch, all runs in one training_curves picture,\n"
         "                                labelled by folder name\n"
         "  a results.json                accuracy against bit width (accuracy_vs_bits); several\n"
         "                                are drawn together\n"
         "  a sensitivity.json            per-layer accuracy drop and SQNR bars (sensitivity);\n"
         "                                one at a time\n"
         "docs/results_format.md defines the two JSON files.\n"
         "\n"
         "  --out DIR          folder for the pictures, made when missing (default: the current\n"
         "                     folder); existing pictures of the same name are replaced\n"
         "  --format png|svg   picture format (default: png)\n"
         "\n"
         "exit status: 0 done, 1 error (python3 or matplotlib missing, an unreadable or damaged\n"
         "file), 2 bad usage or an input that breaks its format\n";
}

int plot_command(const std::vector<std::string>& args, std::ostream& out) {
  std::vector<std::string> paths;
  const auto options = parse_command_options("plot", args, {"--out", "--format"}, &paths);
  if (!options) {
    out << plot_usage();
    return 0;
  }
  std::string out_dir = ".", format = "png";
  for (const auto& [name, value] : *options) {
    if (name == "--out") out_dir = value;
    if (name == "--format") format = value;
  }
  if (format != "png" && format != "svg")
    throw UsageError("plot: --format must be png or svg, got '" + format + "'");
  if (out_dir.empty()) throw UsageError("plot: --out must name a folder, got ''");
  if (paths.empty())
    throw UsageError(
        "plot: expected at least one run folder, results.json or sensitivity.json (see qgrad "
        "plot --help)");
  if (fs::exists(out_dir) && !fs::is_directory(out_dir))
    throw UsageError("plot: --out '" + out_dir + "' exists and is not a folder");

  PlotInputs inputs;
  for (const std::string& p : paths) {
    if (fs::is_directory(p)) {
      add_run(inputs, p, out);
    } else if (fs::exists(p)) {
      add_file(inputs, p);
    } else {
      throw UsageError("plot: '" + p +
                       "' does not exist (expected a run folder, a results.json or a "
                       "sensitivity.json)");
    }
  }
  if (inputs.runs.empty() && !inputs.has_results && inputs.sensitivity_path.empty())
    throw UsageError("plot: nothing to draw (no run has finished an epoch yet)");

  // Everything checked: only now find the tools and touch the output folder.
  const std::string python = python_program();
  const std::string script = plot_script_path();
  fs::create_directories(out_dir);
  const SpecFile spec(plot_spec(inputs, out_dir, format).dump());
  const SubprocessResult r = run_subprocess({python, script, spec.path()});
  if (r.status == 127)
    throw Error("plot: cannot run Python '" + python + "' (" +
                r.output.substr(0, r.output.find('\n')) +
                "); install python3 and python3-matplotlib, or set QGRAD_PYTHON");
  if (r.status == kNoMatplotlibStatus)
    throw Error("plot: " + r.output.substr(0, r.output.find_last_not_of('\n') + 1));
  if (r.status != 0)
    throw Error("plot: drawing failed (" + python + " " + script + " exited with status " +
                std::to_string(r.status) + "):\n" + r.output);
  out << r.output;
  return 0;
}

}  // namespace qgrad::cli
