/// @file
/// Whole-file reads and atomic whole-file writes, the only way qgrad's loaders and savers touch
/// the file system: a read names the operation and the file in every error (a directory, a
/// missing file, a file over the caller's size bound), and a write goes through a temporary file
/// and a rename so that a crash never leaves a half-written file behind.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace qgrad {

/// Reads the regular file `path` whole. Throws IOError naming `op` and the file when it cannot be
/// opened, is not a regular file (a directory, a FIFO) or holds more than `max_bytes` bytes.
std::string read_file(const std::string& path, const std::string& op,
                      std::uint64_t max_bytes = std::numeric_limits<std::uint64_t>::max());

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename, so a
/// crash never leaves a half-written file. The temporary is named `<path>.tmp.<pid>.<thread>`.
void write_file_atomic(const std::string& path, const std::string& bytes);

/// Removes the temporaries that write_file_atomic left next to `path` when a process was killed
/// mid-write (\c \<path\>.tmp.*), except those of live threads of this process. Returns how many
/// were removed. Call it before a run rewrites `path`.
int remove_stale_temporaries(const std::string& path);

}  // namespace qgrad
