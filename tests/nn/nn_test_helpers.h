// Shared helpers for the nn tests: fixture paths, element-wise comparison with tolerances, and a
// unique temporary directory removed at scope exit.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "core/npy.h"
#include "core/tensor.h"

namespace qgrad_test {

inline std::string nn_fixture(const std::string& name) {
  return std::string(QGRAD_FIXTURE_DIR) + "/nn/" + name;
}

inline qgrad::Tensor load_nn(const std::string& name) {
  return qgrad::load_npy(nn_fixture(name + ".npy"));
}

// Every |a - b| <= atol + rtol * |b|; reports the first offending element.
inline void require_close(const qgrad::Tensor& a, const qgrad::Tensor& b, double rtol, double atol,
                          const std::string& what = "") {
  INFO(what);
  REQUIRE(a.shape() == b.shape());
  auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  for (std::size_t i = 0; i < va.size(); ++i) {
    INFO("element " << i << ": " << va[i] << " vs " << vb[i]);
    REQUIRE(std::fabs(va[i] - vb[i]) <= atol + rtol * std::fabs(vb[i]));
  }
}

inline void require_equal(const qgrad::Tensor& a, const qgrad::Tensor& b,
                          const std::string& what = "") {
  INFO(what);
  REQUIRE(a.shape() == b.shape());
  REQUIRE(a.dtype() == b.dtype());
  REQUIRE(a.to_vector<double>() == b.to_vector<double>());
}

// A fresh directory under the system temp dir, deleted with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    path_ = std::filesystem::temp_directory_path() /
            ("qgrad_test_" + std::to_string(stamp) + "_" + std::to_string(++counter));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace qgrad_test
