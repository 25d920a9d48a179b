// Where the tests find the source tree (configs, fuzz corpora), the golden fixtures that
// tests/fixtures/gen_*.py write, and the build tree (the qgrad binary, scratch files). The paths
// are compiled into one translation unit, test_paths.cpp, rather than defined on every test's
// command line: the other test sources then compile to the same objects in every clone and build
// folder, so ccache serves them to CI's next run and to the fresh-machine check.
#pragma once

#include <string>

namespace qgrad_test {

const std::string& source_dir();   // the repository root
const std::string& fixture_dir();  // tests/fixtures
const std::string& binary_dir();   // the CMake build folder

}  // namespace qgrad_test
