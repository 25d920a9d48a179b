// Interrupted: what a qgrad command throws when Ctrl-C (SIGINT) or SIGTERM stopped it after it
// saved what it had (a training cell of `qgrad reproduce`, say). The dispatcher prints its
// message and exits with status 130, as a shell reports a process ended by SIGINT, so every
// command reports an interruption the same way whether a guard caught the signal or not.
#pragma once

#include "core/error.h"

namespace qgrad::cli {

class Interrupted : public Error {
 public:
  using Error::Error;
};

// The exit status of an interrupted command.
inline constexpr int kInterruptedStatus = 130;

}  // namespace qgrad::cli
