// Helpers for the nn tests: the shared fixture, comparison and scratch-file helpers of
// tests/support, plus shorthands for the fixtures of tests/fixtures/nn (written by gen_nn.py).
#pragma once

#include <string>

#include "support/fixtures.h"
#include "support/scratch_files.h"

namespace qgrad_test {

inline std::string nn_fixture(const std::string& name) {
  return fixture_path("nn", name);
}

inline qgrad::Tensor load_nn(const std::string& name) {
  return load_fixture("nn", name);
}

}  // namespace qgrad_test
