// UsageError: what the qgrad command line throws for a mistake of the user's invocation (an
// unknown option, a bad config key or value). The dispatcher prints its message and exits with
// status 2, as Unix tools do for usage errors; every other failure exits with status 1.
#pragma once

#include "core/error.h"

namespace qgrad::cli {

class UsageError : public ValueError {
 public:
  using ValueError::ValueError;
};

}  // namespace qgrad::cli
