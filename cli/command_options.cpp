// parse_command_options: the shared option parser of qgrad's subcommands.
#include "cli/command_options.h"

#include <algorithm>
#include <filesystem>

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cli/usage_error.h"
#include "core/error.h"

namespace qgrad::cli {

std::optional<std::vector<std::pair<std::string, std::string>>> parse_command_options(
    const std::string& command, const std::vector<std::string>& args,
    const std::vector<std::string>& known, std::vector<std::string>* positionals,
    const std::vector<std::string>& flags) {
  std::vector<std::pair<std::string, std::string>> options;
  bool only_operands = false;  // after "--", so a file named "-x" can be given
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (positionals && (only_operands || a.empty() || a[0] != '-')) {
      positionals->push_back(a);
      continue;
    }
    if (positionals && a == "--") {
      only_operands = true;
      continue;
    }
    if (a == "--help" || a == "-h") return std::nullopt;
    std::string name = a, value;
    const std::size_t eq = a.find('=');
    const bool inline_value = a.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inline_value) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
    }
    if (std::find(flags.begin(), flags.end(), a) != flags.end()) {
      options.emplace_back(a, "");
      continue;
    }
    if (std::find(flags.begin(), flags.end(), name) != flags.end())
      throw UsageError(command + ": " + name + " takes no value, got '" + a + "'");
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

std::int64_t parse_int_option(const std::string& command, const std::string& option,
                              const std::string& text, std::int64_t lo, std::int64_t hi) {
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || v < lo || v > hi)
    throw UsageError(command + ": " + option + " must be an integer in [" + std::to_string(lo) +
                     ", " + std::to_string(hi) + "], got '" + text + "'");
  return v;
}

void check_writable_location(const std::string& shown, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dir = fs::path(path).parent_path();
  while (!dir.empty() && !fs::exists(dir, ec)) dir = dir.parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir, ec))
    throw IOError(shown + " cannot be written: '" + dir.string() + "' is not a folder");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw IOError(shown + " cannot be written: folder '" + dir.string() +
                  "': " + std::strerror(errno));
}

void check_output_folder(const std::string& command, const std::string& option,
                         const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);  // follows a symbolic link to its target
  const std::string shown = command + ": " + option + " '" + path + "'";
  if (fs::exists(st) && !fs::is_directory(st))
    throw UsageError(
        shown + " is " +
        (fs::is_regular_file(st) ? std::string("a file") : "a device, FIFO or socket") +
        ", not a folder");
  // The files go inside it: an existing folder must take them, a new one its parent.
  check_writable_location(shown, fs::is_directory(st) ? (fs::path(path) / "x").string() : path);
}

void check_output_file(const std::string& command, const std::string& option,
                       const std::string& path,
                       const std::vector<std::pair<std::string, std::string>>& inputs) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);  // follows a symbolic link to its target
  const std::string shown = command + ": " + option + " '" + path + "'";
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw UsageError(shown + " is " +
                     (fs::is_directory(st) ? std::string("a folder") : "a device, FIFO or socket") +
                     ", not a regular file; give a new path or a file to replace");
  for (const auto& [what, input] : inputs)
    if (fs::exists(st) && !input.empty() && fs::equivalent(path, input, ec))
      throw UsageError(shown + " is " + what + " itself; give another path");
  check_writable_location(shown, path);
}

}  // namespace qgrad::cli
