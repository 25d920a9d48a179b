// In-memory gzip compression and decompression with zlib, used by the IDX reader/writer so
// that .gz and plain files are handled alike and corrupt or truncated streams are detected.
#pragma once

#include <string>

namespace qgrad::data {

// True when `bytes` starts with the gzip magic (1f 8b).
bool is_gzip(const std::string& bytes);
// Decompresses one or more concatenated gzip members. Throws IOError naming `source` on corrupt
// or truncated data.
std::string gunzip(const std::string& bytes, const std::string& source);
// Compresses into a single gzip member (default level).
std::string gzip(const std::string& bytes);

}  // namespace qgrad::data
