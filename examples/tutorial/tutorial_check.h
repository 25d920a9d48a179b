// The checks shared by the tutorial's examples (docs/tutorial.md): each example computes what it
// claims twice, once by hand from the formula and once with qgrad, and compares them here.
// Check::exact and Check::near print a line per comparison (OK or MISMATCH with both values) and
// count the mismatches; an example returns Check::exit_code() from main, so ctest fails on any
// mismatch. fmt() prints float vectors the way the tutorial quotes them (%.8g).
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace tutorial {

inline std::string fmt(const std::vector<float>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%.8g", i ? ", " : "", static_cast<double>(v[i]));
    s += buf;
  }
  return s + "]";
}

inline std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.8g", v);
  return buf;
}

class Check {
 public:
  // Bit-for-bit equality of float values (the same float32 operations in the same order).
  void exact(const char* what, const std::vector<float>& got, const std::vector<float>& want) {
    bool ok = got.size() == want.size();
    for (std::size_t i = 0; ok && i < got.size(); ++i) ok = got[i] == want[i];
    report(what, ok, fmt(got), fmt(want));
  }
  // |got - want| <= tol * max(1, |want|) for every element.
  void near(const char* what, const std::vector<float>& got, const std::vector<float>& want,
            double tol) {
    bool ok = got.size() == want.size();
    for (std::size_t i = 0; ok && i < got.size(); ++i)
      ok = std::fabs(static_cast<double>(got[i]) - want[i]) <=
           tol * std::fmax(1.0, std::fabs(static_cast<double>(want[i])));
    report(what, ok, fmt(got), fmt(want));
  }
  void near(const char* what, double got, double want, double tol) {
    report(what, std::fabs(got - want) <= tol * std::fmax(1.0, std::fabs(want)), fmt(got),
           fmt(want));
  }
  // A claim that is not a comparison of two values ("the loss went down").
  void that(const char* what, bool ok) { report(what, ok, ok ? "true" : "false", "true"); }

  int failures() const { return failures_; }
  int exit_code() const {
    std::printf("%s: %d check(s) failed\n", failures_ ? "FAILED" : "all checks passed", failures_);
    return failures_ ? 1 : 0;
  }

 private:
  void report(const char* what, bool ok, const std::string& got, const std::string& want) {
    if (ok) {
      std::printf("  check OK: %s\n", what);
    } else {
      std::printf("  check MISMATCH: %s: got %s, expected %s\n", what, got.c_str(), want.c_str());
      ++failures_;
    }
  }
  int failures_ = 0;
};

}  // namespace tutorial
