// write_file_atomically: temporary file in the target's folder + fsync + rename(2); the
// temporary file is removed on every failure path (RAII guard).
#include "deploy/onnx/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/error.h"

namespace qgrad::deploy {

namespace {

// Closes the descriptor and unlinks the temporary file unless released.
class TempFile {
 public:
  explicit TempFile(std::string pattern) : name_(pattern.begin(), pattern.end()) {
    name_.push_back('\0');
    fd_ = ::mkstemp(name_.data());
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!released_) ::unlink(name_.data());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  int fd() const { return fd_; }
  const char* name() const { return name_.data(); }
  int close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }
  void release() { released_ = true; }

 private:
  std::vector<char> name_;
  int fd_ = -1;
  bool released_ = false;
};

}  // namespace

void write_file_atomically(const std::string& path, const std::string& bytes) {
  QGRAD_CHECK(!path.empty(), IOError, "write: empty output path");
  TempFile tmp(path + ".tmp.XXXXXX");
  QGRAD_CHECK(tmp.fd() >= 0, IOError, "cannot write '", path, "': ", std::strerror(errno));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(tmp.fd(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    QGRAD_CHECK(n > 0, IOError, "cannot write '", path, "': ", std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
  QGRAD_CHECK(::fsync(tmp.fd()) == 0, IOError, "cannot write '", path, "': ", std::strerror(errno));
  // mkstemp creates 0600; give the file the permissions an ordinary write would (0666 & ~umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  QGRAD_CHECK(::fchmod(tmp.fd(), 0666 & ~mask) == 0, IOError, "cannot write '", path,
              "': ", std::strerror(errno));
  QGRAD_CHECK(tmp.close() == 0, IOError, "cannot write '", path, "': ", std::strerror(errno));
  QGRAD_CHECK(::rename(tmp.name(), path.c_str()) == 0, IOError, "cannot write '", path,
              "': ", std::strerror(errno));
  tmp.release();
}

}  // namespace qgrad::deploy
