// InterruptGuard: sigaction-based handler that sets a sig_atomic_t flag and restores the
// default action so a second signal ends the process.
#include "cli/interrupt_guard.h"

#include <utility>

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
  // A signal the parent set to be ignored (e.g. SIGINT of a background job, nohup) stays ignored.
  for (auto [sig, old] : {std::pair{SIGINT, &old_int_}, std::pair{SIGTERM, &old_term_}}) {
    sigaction(sig, nullptr, old);
    if (old->sa_handler != SIG_IGN) sigaction(sig, &sa, nullptr);
  }
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
