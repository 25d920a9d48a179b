// The deterministic-algorithms switch of core/deterministic.h: one relaxed atomic (it orders no
// other memory; a kernel reading it only picks an algorithm).
#include "core/deterministic.h"

#include <atomic>

namespace qgrad {

namespace {
std::atomic<bool> g_deterministic{false};
}  // namespace

void set_deterministic_algorithms(bool on) {
  g_deterministic.store(on, std::memory_order_relaxed);
}

bool deterministic_algorithms() {
  return g_deterministic.load(std::memory_order_relaxed);
}

}  // namespace qgrad
