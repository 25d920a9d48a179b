// ScratchDir: mkdtemp on construction, std::filesystem::remove_all on destruction.
#include "deploy/ort/scratch_dir.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include "core/error.h"

namespace qgrad::deploy {

ScratchDir::ScratchDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/" + prefix + ".XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  QGRAD_CHECK(mkdtemp(buf.data()) != nullptr, IOError, "cannot create a temporary folder ", pattern,
              ": ", std::strerror(errno));
  path_ = buf.data();
}

ScratchDir::~ScratchDir() {
  std::error_code ec;  // a destructor must not throw; a leftover temporary folder is harmless
  std::filesystem::remove_all(path_, ec);
}

}  // namespace qgrad::deploy
