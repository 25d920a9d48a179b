// Subcommand dispatch and the exception-to-exit-status mapping.
#include "cli/command_dispatch.h"

#include <ostream>

#include <nlohmann/json.hpp>

#include "cli/autoquant_command.h"
#include "cli/eval_command.h"
#include "cli/export_command.h"
#include "cli/import_command.h"
#include "cli/interrupted.h"
#include "cli/plot_command.h"
#include "cli/ptq_command.h"
#include "cli/recipes_command.h"
#include "cli/reproduce_command.h"
#include "cli/sensitivity_command.h"
#include "cli/show_command.h"
#include "cli/train_command.h"
#include "cli/train_config.h"
#include "cli/usage_error.h"
#include "cli/verify_deploy_command.h"
#include "core/version.h"
#include "distributed/init.h"

namespace qgrad::cli {

std::string main_usage() {
  return "usage: qgrad <command> [options]\n"
         "\n"
         "commands:\n"
         "  train [--config FILE.json]   train a model (defaults: lenet5bn on Fashion-MNIST)\n"
         "  eval --checkpoint FILE       test loss and accuracy of a checkpoint\n"
         "  export --checkpoint FILE [--onnx OUT] [--encodings OUT] [--quantizers OUT]\n"
         "                               ONNX (float or QDQ), AIMET encodings, quantizer state\n"
         "  import --onnx FILE --out FILE.safetensors\n"
         "                               a float CNN from ONNX as a qgrad model: its weights\n"
         "  verify-deploy --checkpoint FILE\n"
         "                               fake-quant, int8 and ONNX Runtime on the test set:\n"
         "                               accuracy and top-1 agreement of every pair\n"
         "  ptq --checkpoint FILE        post-training quantization of a float checkpoint:\n"
         "                               calibrate, compare accuracy, save a quantized one\n"
         "  recipes [NAME]               the named QAT recipes, or one as JSON\n"
         "  show --checkpoint FILE | --config FILE | --model NAME [--recipe R]\n"
         "                               the model as print(model): layers and each\n"
         "                               quantizer's bits, granularity and state\n"
         "  plot INPUT... [--out DIR]    training curves, accuracy against bits and layer\n"
         "                               sensitivity pictures (matplotlib)\n"
         "  sensitivity --checkpoint FILE\n"
         "                               per-layer accuracy and SQNR with only that layer\n"
         "                               quantized (table, sensitivity.json, a bar chart)\n"
         "  autoquant --checkpoint FILE --budget \"avg_weight_bits<=4\"\n"
         "                               per-layer weight bit widths within a budget\n"
         "  reproduce [--quick]          the paper table: FP32, PTQ and QAT recipes over\n"
         "                               models and seeds (results.md, results.json, plots)\n"
         "  help [command]               this text, or a command's\n"
         "  version                      the version and git commit (also --version)\n"
         "\n"
         "qgrad <command> --help describes each command.\n"
         "\n"
         "train config keys (JSON, nested objects by dots; every key optional):\n" +
         train_config_help();
}

namespace {

// The exit status of a failed command. In a job of several ranks (mpirun -np N) it ends every
// rank at once (MPI_Abort), after this rank's message, instead of leaving the others waiting
// in a collective for it.
int failed(std::ostream& err, int status) {
  if (distributed::launched_world_size() > 1) {
    err << std::flush;
    distributed::abort_job(status);
  }
  return status;
}

// How a message names the program: "qgrad train", or "qgrad" for no command or an option; in a
// job of several ranks, also which rank speaks: "qgrad train (rank 1 of 2)".
std::string program(const std::string& command) {
  std::string name = command.empty() || command[0] == '-' ? "qgrad" : "qgrad " + command;
  const int ranks = distributed::launched_world_size();
  if (ranks > 1)
    name += " (rank " + std::to_string(distributed::launched_rank()) + " of " +
            std::to_string(ranks) + ")";
  return name;
}

// Every argument must be UTF-8: paths and names go into JSON files (configs, checkpoint
// metadata, results), which hold only UTF-8, and a path changed on the way would no longer name
// its file. Checked once here, before any work: it failed at the first JSON write, after
// training or calibrating (nlohmann's type_error 316).
void check_utf8_arguments(const std::vector<std::string>& args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const nlohmann::json arg(args[i]);
    try {
      (void)arg.dump();
    } catch (const nlohmann::json::type_error&) {
      const std::string shown = arg.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      throw UsageError("argument " + std::to_string(i + 1) + " (" + shown +
                       ") is not valid UTF-8; qgrad stores paths and names in JSON files, which "
                       "hold UTF-8 only: rename the file or folder");
    }
  }
}

}  // namespace

int run_command_line(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string command = args.empty() ? "" : args[0];
  try {
    check_utf8_arguments(args);
    const std::vector<std::string> rest(args.empty() ? args.end() : args.begin() + 1, args.end());
    if (command == "--help" || command == "-h" || command == "help") {
      if (rest.empty()) {
        out << main_usage();
      } else if (rest[0] == "train") {
        out << train_usage();
      } else if (rest[0] == "eval") {
        out << eval_usage();
      } else if (rest[0] == "export") {
        out << export_usage();
      } else if (rest[0] == "import") {
        out << import_usage();
      } else if (rest[0] == "verify-deploy") {
        out << verify_deploy_usage();
      } else if (rest[0] == "ptq") {
        out << ptq_usage();
      } else if (rest[0] == "recipes") {
        out << recipes_usage();
      } else if (rest[0] == "show") {
        out << show_usage();
      } else if (rest[0] == "plot") {
        out << plot_usage();
      } else if (rest[0] == "sensitivity") {
        out << sensitivity_usage();
      } else if (rest[0] == "autoquant") {
        out << autoquant_usage();
      } else if (rest[0] == "reproduce") {
        out << reproduce_usage();
      } else {
        throw UsageError("help: unknown command '" + rest[0] + "'");
      }
      return 0;
    }
    if (command == "--version" || command == "version") {
      out << version_string() << "\n";
      return 0;
    }
    if (command == "train") return train_command(rest, out);
    if (command == "eval") return eval_command(rest, out);
    if (command == "export") return export_command(rest, out);
    if (command == "import") return import_command(rest, out);
    if (command == "verify-deploy") return verify_deploy_command(rest, out);
    if (command == "ptq") return ptq_command(rest, out);
    if (command == "recipes") return recipes_command(rest, out);
    if (command == "show") return show_command(rest, out);
    if (command == "plot") return plot_command(rest, out);
    if (command == "reproduce") return reproduce_command(rest, out);
    if (command == "sensitivity") return sensitivity_command(rest, out);
    if (command == "autoquant") return autoquant_command(rest, out);
    if (command.empty()) {
      err << main_usage();
      return 2;
    }
    throw UsageError("unknown command '" + command +
                     "' (commands: train, eval, export, import, verify-deploy, ptq, sensitivity, "
                     "autoquant, recipes, "
                     "show, plot, reproduce, help, version)");
  } catch (const UsageError& e) {
    err << program(command) << ": error: " << e.what() << "\n";
    return failed(err, 2);
  } catch (const Interrupted& e) {
    err << program(command) << ": " << e.what() << "\n";
    return failed(err, kInterruptedStatus);
  } catch (const std::exception& e) {
    err << program(command) << ": error: " << e.what() << "\n";
    return failed(err, 1);
  }
}

}  // namespace qgrad::cli
