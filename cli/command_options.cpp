// parse_command_options: the shared option parser of qgrad's subcommands.
#include "cli/command_options.h"

#include <algorithm>

#include "cli/usage_error.h"

namespace qgrad::cli {

std::optional<std::vector<std::pair<std::string, std::string>>> parse_command_options(
    const std::string& command, const std::vector<std::string>& args,
    const std::vector<std::string>& known, const std::vector<std::string>& flags) {
  std::vector<std::pair<std::string, std::string>> options;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") return std::nullopt;
    std::string name = a, value;
    const std::size_t eq = a.find('=');
    const bool inline_value = a.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inline_value) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
    }
    if (std::find(flags.begin(), flags.end(), name) != flags.end()) {
      if (inline_value) throw UsageError(command + ": " + name + " takes no value");
      options.emplace_back(name, "");
      continue;
    }
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw UsageError(command + ": unknown argument '" + a + "' (see qgrad " + command +
                       " --help)");
    if (!inline_value) {
      if (i + 1 >= args.size()) throw UsageError(command + ": " + name + " needs a value");
      value = args[++i];
    }
    options.emplace_back(name, value);
  }
  return options;
}

}  // namespace qgrad::cli
