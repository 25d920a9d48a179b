// Catch2's main for test_gpu, the CUDA tests (tests/*/test_cuda_*.cpp). Without a visible CUDA
// device, or in a CPU-only build, it runs nothing and exits 77, which ctest reports as Skipped
// (the tests are registered with SKIP_RETURN_CODE 77) instead of passing silently. Listing the
// tests (--list-*, what catch_discover_tests runs at build time) always works, so every GPU test
// case is registered, and skipped, on every machine. One check runs everywhere, GPU or not:
// every op with CUDA kernels in this build has a cross-device case (else exit 1), so a kernel
// registered without a test fails CI, which has no GPU.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstring>
#include <iostream>

#include "core/device.h"
#include "ops/backend_op_case.h"

int main(int argc, char* argv[]) {
  bool listing = false;
  for (int i = 1; i < argc; ++i) listing = listing || std::strncmp(argv[i], "--list", 6) == 0;
  // Checked with or without a GPU: every op with CUDA kernels must have a cross-device case.
  const std::vector<std::string> missing = qgrad_test::cuda_ops_without_case();
  if (!listing && !missing.empty()) {
    std::cout << "FAILED: ops with CUDA kernels but no case in tests/*/test_cuda_cases_*.cpp:";
    for (const std::string& op : missing) std::cout << " " << op;
    std::cout << "\n";
    return 1;
  }
  if (!listing && !qgrad::cuda_is_available()) {
    std::cout << "SKIPPED: no CUDA device is visible"
#ifndef QGRAD_WITH_CUDA
                 " (this build of qgrad has no CUDA support)"
#endif
                 "\n";
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
