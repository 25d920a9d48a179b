// In-memory gzip compression and decompression with zlib, used by the IDX reader/writer so
// that .gz and plain files are handled alike and corrupt or truncated streams are detected.
// GunzipReader inflates incrementally, so a reader that learns the size it expects from the
// first decompressed bytes (the IDX header) never inflates more than that: a small file that
// expands to gigabytes is refused after at most the declared size plus one probe byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>

namespace qgrad::data {

// True when `bytes` starts with the gzip magic (1f 8b).
bool is_gzip(const std::string& bytes);

// Decompresses one or more concatenated gzip members (as `cat a.gz b.gz` makes) from `bytes`,
// which must outlive the reader. Throws IOError naming `source` on corrupt data, data that ends
// inside a member, or bytes after the last member that are not another member.
class GunzipReader {
 public:
  GunzipReader(const std::string& bytes, std::string source);
  ~GunzipReader();
  GunzipReader(const GunzipReader&) = delete;
  GunzipReader& operator=(const GunzipReader&) = delete;

  // Appends up to `n` more decompressed bytes to `out`, growing it only as data arrives; returns
  // how many were appended, fewer than `n` only at the end of the last member.
  std::size_t read(std::string& out, std::size_t n);
  // True when no decompressed byte is left (every member ended with a valid trailer); probes by
  // inflating at most one byte.
  bool at_end();
  // Decompressed bytes produced so far.
  std::uint64_t total_out() const { return total_out_; }

 private:
  struct Stream;
  std::unique_ptr<Stream> z_;
  std::string source_;
  bool ended_ = false;
  std::uint64_t total_out_ = 0;
};

// Decompresses the whole input (every member). Throws IOError naming `source` on corrupt or
// truncated data, and when the output would exceed `max_bytes`.
std::string gunzip(const std::string& bytes, const std::string& source,
                   std::uint64_t max_bytes = std::numeric_limits<std::uint64_t>::max());
// Compresses into a single gzip member (default level).
std::string gzip(const std::string& bytes);

}  // namespace qgrad::data
