// Scratch files for tests that write and read back files: a unique temporary directory removed
// at scope exit, and whole-file byte reads and writes (to craft or corrupt files byte by byte).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "core/error.h"

namespace qgrad_test {

// A fresh directory under the system temp dir (mkdtemp: unique across the processes ctest runs
// at once), deleted with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "qgrad_test_XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) throw std::runtime_error("TempDir: mkdtemp failed");
    path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// The message of the IOError that `f` throws, or "(no IOError)" (the file-reading tests check
// that their errors name the file and what is wrong with it).
inline std::string io_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const qgrad::IOError& e) {
    return e.what();
  }
  return "(no IOError)";
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace qgrad_test
