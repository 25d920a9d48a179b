// run_subprocess: runs a program with arguments (no shell, so paths with spaces or quotes need no
// escaping) and returns its exit status and everything it wrote to stdout and stderr, as one
// interleaved text. `qgrad plot` uses it to run its Python drawing script. A program that cannot
// be started (missing, not executable) is reported as exit status 127 with the reason in the
// output, the status a shell gives; a program killed by a signal reports 128 + the signal.
#pragma once

#include <string>
#include <vector>

namespace qgrad::cli {

struct SubprocessResult {
  int status = 0;
  std::string output;
};

// argv[0] is the program: a path, or a name looked up in PATH.
SubprocessResult run_subprocess(const std::vector<std::string>& argv);

}  // namespace qgrad::cli
