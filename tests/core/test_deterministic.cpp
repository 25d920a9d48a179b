// The deterministic-algorithms switch (core/deterministic.h): off by default, set and cleared
// explicitly, and visible from other threads (the kernels read it on whichever thread runs them).
#include <catch2/catch.hpp>

#include <thread>

#include "core/deterministic.h"

using namespace qgrad;

TEST_CASE("deterministic algorithms: off by default, switched on and off explicitly") {
  CHECK_FALSE(deterministic_algorithms());
  set_deterministic_algorithms(true);
  CHECK(deterministic_algorithms());
  bool seen = false;
  std::thread([&] { seen = deterministic_algorithms(); }).join();
  CHECK(seen);
  set_deterministic_algorithms(true);  // idempotent
  CHECK(deterministic_algorithms());
  set_deterministic_algorithms(false);
  CHECK_FALSE(deterministic_algorithms());
  std::thread([&] { seen = deterministic_algorithms(); }).join();
  CHECK_FALSE(seen);
}
