/// @file
/// qgrad's version (the CMake project version) and the git commit it was built from, for
/// `qgrad --version`, the config.json of every run and programs that link qgrad.
#pragma once

#include <string>

namespace qgrad {

/// The release version, e.g. "0.1.0".
const char* version();

/// The git commit of the sources built (12 hex digits, "-dirty" appended when they had
/// uncommitted changes), or "" when they were not a git checkout.
const char* git_commit();

/// "qgrad 0.1.0 (commit 0123456789ab)", or "qgrad 0.1.0" without a commit.
std::string version_string();

}  // namespace qgrad
