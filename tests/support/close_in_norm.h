// check_close_in_norm: the float32 check of the GPU training tests. Training amplifies the
// rounding differences of cuDNN / cuBLAS against oneDNN, so a tensor after a few steps must match
// the CPU's in norm, within 1% (plus a floor of 1e-4 an element for tensors near 0, such as a
// fresh bias), which still fails for a missing or wrong update.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

namespace qgrad_test {

inline void check_close_in_norm(const std::vector<double>& cpu, const std::vector<double>& gpu) {
  REQUIRE(cpu.size() == gpu.size());
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    diff += (cpu[i] - gpu[i]) * (cpu[i] - gpu[i]);
    norm += cpu[i] * cpu[i];
  }
  diff = std::sqrt(diff), norm = std::sqrt(norm);
  INFO("|cpu - cuda| " << diff << ", |cpu| " << norm);
  CHECK(diff <= 1e-2 * norm + 1e-4 * std::sqrt(static_cast<double>(cpu.size())));
}

}  // namespace qgrad_test
