// Whole-file reads, atomic writes through a temporary and a rename, and the clean-up of the
// temporaries a killed writer leaves behind.
#include "core/file_io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <system_error>
#include <thread>

#include <unistd.h>

#include "core/error.h"

namespace qgrad {

namespace fs = std::filesystem;

namespace {

std::string temporary_prefix(const std::string& path) {
  return fs::path(path).filename().string() + ".tmp.";
}

}  // namespace

std::string read_file(const std::string& path, const std::string& op, std::uint64_t max_bytes) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  QGRAD_CHECK(!ec && fs::exists(st), IOError, op, ": cannot open '", path, "': no such file");
  QGRAD_CHECK(!fs::is_directory(st), IOError, op, ": '", path, "' is a directory, expected a file");
  QGRAD_CHECK(fs::is_regular_file(st), IOError, op, ": '", path, "' is not a regular file");
  const std::uintmax_t size = fs::file_size(path, ec);
  QGRAD_CHECK(!ec, IOError, op, ": cannot read the size of '", path, "': ", ec.message());
  QGRAD_CHECK(size <= max_bytes, IOError, op, ": '", path, "' is ", size, " bytes, more than the ",
              max_bytes, "-byte limit for this kind of file");
  std::ifstream f(path, std::ios::binary);
  QGRAD_CHECK(f.good(), IOError, op, ": cannot open '", path, "': ", std::strerror(errno));
  std::string bytes(static_cast<std::size_t>(size), '\0');
  f.read(bytes.data(), static_cast<std::streamsize>(size));
  QGRAD_CHECK(static_cast<std::uintmax_t>(f.gcount()) == size && !f.bad(), IOError, op,
              ": error reading '", path, "' (read ", f.gcount(), " of ", size, " bytes)");
  return bytes;
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  // Unique per process and thread, so concurrent writers of one path never share a temp file.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                          std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    QGRAD_CHECK(f != nullptr, IOError, "write_file_atomic: cannot create '", tmp,
                "': ", std::strerror(errno));
    const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size() &&
                    std::fflush(f) == 0 && ::fsync(fileno(f)) == 0;
    const bool closed = std::fclose(f) == 0;
    if (!ok || !closed) {
      std::remove(tmp.c_str());
      throw IOError("write_file_atomic: failed writing '" + tmp + "'");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw IOError("write_file_atomic: cannot rename '" + tmp + "' to '" + path +
                  "': " + std::strerror(errno));
  }
}

int remove_stale_temporaries(const std::string& path) {
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string prefix = temporary_prefix(path);
  // This process's own temporaries may belong to a writer running on another thread now.
  const std::string own = prefix + std::to_string(::getpid()) + ".";
  std::error_code ec;
  int removed = 0;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0 || name.compare(0, own.size(), own) == 0)
      continue;
    std::error_code rm;
    if (it->is_regular_file(rm) && fs::remove(it->path(), rm)) ++removed;
  }
  return removed;
}

}  // namespace qgrad
