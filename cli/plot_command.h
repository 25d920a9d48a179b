// `qgrad plot INPUT... [--out DIR] [--format png|svg]`: draws what qgrad's commands measured.
// Each INPUT is a run folder of `qgrad train` (its metrics.jsonl: train loss and test accuracy
// per epoch, several runs overlaid in training_curves.png), a results.json (accuracy against
// bit width, accuracy_vs_bits.png) or a sensitivity.json (per-layer sensitivity bars,
// sensitivity.png); docs/results_format.md defines the two JSON files. The C++ side checks every
// input, so a bad argument or file is an error naming it before anything is drawn, and hands the
// checked data as one JSON "plot spec" to cli/plot_runs.py, which draws with matplotlib (Debian's
// python3-matplotlib; the interpreter is /usr/bin/python3 or $QGRAD_PYTHON). That script writes
// every picture to a temporary name and renames them only when all are drawn, so a failure
// leaves no file half-written. A missing interpreter, script or matplotlib is an error (exit 1)
// that says what to install.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace qgrad::cli {

// The command line; returns the exit status. Usage errors throw UsageError.
int plot_command(const std::vector<std::string>& args, std::ostream& out);
std::string plot_usage();

// The drawing script: next to an installed qgrad (<bin>/../share/qgrad/plot_runs.py), else in
// the source tree this qgrad was built from. Throws Error listing the places looked at.
std::string plot_script_path();

}  // namespace qgrad::cli
