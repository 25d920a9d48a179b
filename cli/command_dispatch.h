// The `qgrad` command line: picks the subcommand (train, eval, help), prints usage, and turns
// exceptions into messages and exit statuses (2 for usage and config errors, 1 for any other
// failure such as a missing dataset or a corrupt checkpoint).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace qgrad::cli {

// args excludes the program name. Normal output goes to `out`, errors to `err`.
int run_command_line(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
std::string main_usage();

}  // namespace qgrad::cli
