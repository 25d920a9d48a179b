// The version strings, from the header that cmake/QgradVersion.cmake generates at build time.
#include "core/version.h"

#include "qgrad_version_generated.h"

namespace qgrad {

const char* version() { return QGRAD_VERSION_STRING; }

const char* git_commit() { return QGRAD_GIT_COMMIT; }

std::string version_string() {
  std::string s = std::string("qgrad ") + version();
  if (*git_commit() != '\0') s += std::string(" (commit ") + git_commit() + ")";
  return s;
}

}  // namespace qgrad
