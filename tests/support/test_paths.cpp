// The test paths of test_paths.h, from the definitions tests/CMakeLists.txt gives this file
// alone (QGRAD_SOURCE_DIR, QGRAD_FIXTURE_DIR, QGRAD_BINARY_DIR).
#include "support/test_paths.h"

namespace qgrad_test {

const std::string& source_dir() {
  static const std::string dir = QGRAD_SOURCE_DIR;
  return dir;
}

const std::string& fixture_dir() {
  static const std::string dir = QGRAD_FIXTURE_DIR;
  return dir;
}

const std::string& binary_dir() {
  static const std::string dir = QGRAD_BINARY_DIR;
  return dir;
}

}  // namespace qgrad_test
