// InterruptGuard: sigaction-based handler that sets a sig_atomic_t flag and restores the
// default action so a second signal ends the process.
#include "cli/interrupt_guard.h"

namespace qgrad::cli {

namespace {

volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_signal(int sig) {
  g_signal = sig;
  std::signal(sig, SIG_DFL);  // async-signal-safe; the next one terminates
}

}  // namespace

InterruptGuard::InterruptGuard() {
  g_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

bool InterruptGuard::interrupted() const {
  return g_signal != 0;
}
int InterruptGuard::signal() const {
  return static_cast<int>(g_signal);
}

}  // namespace qgrad::cli
