// The peak resident set size of the running benchmark process, as the C++ benchmarks in bench/
// report it next to their timings (the same figure the Python drivers read for PyTorch).
#pragma once

#include <fstream>
#include <string>

namespace qgrad_bench {

// Peak resident set size of this process in MiB (VmHWM in /proc/self/status); -1 when the file
// or the entry is missing.
inline double peak_rss_mib() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmHWM:") {
      double kb = 0;
      in >> kb;
      return kb / 1024.0;
    }
    std::string rest;
    std::getline(in, rest);
  }
  return -1;
}

}  // namespace qgrad_bench
