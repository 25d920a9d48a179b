// run_subprocess: runs a program with arguments (no shell, so paths with spaces or quotes need no
// escaping) and returns its exit status and what it wrote to stdout and stderr, as one
// interleaved text. `qgrad plot` runs its Python drawing script with it, and deploy/ort ONNX
// Runtime (so it sits in core, below both). A program that cannot be started (missing, not executable) is reported as exit status
// 127 with the reason in the output, the status a shell gives; a program killed by a signal
// reports 128 + the signal. A misbehaving program can neither exhaust memory nor hang the caller:
// the output kept is bounded (the first max_output bytes; the rest is read and dropped, with a
// note), and one still running after `timeout_s` is killed and reported as status 124, as
// timeout(1) does.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace qgrad {

struct SubprocessResult {
  int status = 0;
  std::string output;
  bool timed_out = false;
};

struct SubprocessLimits {
  std::size_t max_output = std::size_t{16} << 20;  // bytes kept of the program's output
  double timeout_s = 3600;                         // then SIGKILL, status 124
};

// The exit status of a program killed at its time limit.
inline constexpr int kSubprocessTimeoutStatus = 124;

// argv[0] is the program: a path, or a name looked up in PATH.
SubprocessResult run_subprocess(const std::vector<std::string>& argv,
                                const SubprocessLimits& limits = SubprocessLimits());

}  // namespace qgrad
