// InterruptGuard: while alive, the first SIGINT (Ctrl-C) or SIGTERM only raises a flag, so the
// training loop can finish its batch, write a checkpoint that resumes exactly there, and exit;
// a second signal terminates at once (default action). A signal that was ignored when the guard
// was made (a background job's SIGINT) stays ignored. The previous handlers come back on
// destruction. The flag is process-wide by nature (signals are), hence the static state.
#pragma once

#include <csignal>

namespace qgrad::cli {

class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // Whether a signal arrived since construction.
  bool interrupted() const;
  // The signal number received (0 if none).
  int signal() const;

 private:
  struct sigaction old_int_ {
  }, old_term_{};
};

}  // namespace qgrad::cli
