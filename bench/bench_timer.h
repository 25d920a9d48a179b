// Timing helpers shared by the C++ benchmarks in bench/: the median wall time of repeated runs
// after one warm-up run, and a report line with milliseconds and GB/s.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

namespace qgrad_bench {

// Median seconds of `reps` runs of f, after one warm-up run (page faults, first touch,
// primitive caches).
inline double median_seconds(const std::function<void()>& f, int reps) {
  f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    const auto b = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double>(b - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// "<name> <ms> ms <GB/s> GB/s", the name left-aligned in name_width columns and the
// milliseconds right-aligned in ms_width.
inline void report(const char* name, double seconds, double bytes, int name_width = 44,
                   int ms_width = 8) {
  std::printf("%-*s %*.2f ms %8.2f GB/s\n", name_width, name, ms_width, seconds * 1e3,
              bytes / seconds / 1e9);
}

}  // namespace qgrad_bench
