// gzip via zlib's inflate/deflate with the gzip wrapper (windowBits 15 + 16).
#include "nn/data/gzip.h"

#include <zlib.h>

#include <memory>

#include "core/error.h"

namespace qgrad::data {

namespace {

struct InflateStream {
  z_stream s{};
  bool ok = false;
  InflateStream() { ok = inflateInit2(&s, 15 + 16) == Z_OK; }
  ~InflateStream() {
    if (ok) inflateEnd(&s);
  }
  InflateStream(const InflateStream&) = delete;
  InflateStream& operator=(const InflateStream&) = delete;
};

struct DeflateStream {
  z_stream s{};
  bool ok = false;
  DeflateStream() {
    ok =
        deflateInit2(&s, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
  }
  ~DeflateStream() {
    if (ok) deflateEnd(&s);
  }
  DeflateStream(const DeflateStream&) = delete;
  DeflateStream& operator=(const DeflateStream&) = delete;
};

}  // namespace

bool is_gzip(const std::string& bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string gunzip(const std::string& bytes, const std::string& source) {
  InflateStream z;
  QGRAD_CHECK(z.ok, IOError, "gunzip: cannot initialise zlib for '", source, "'");
  std::string out;
  std::string chunk(1 << 16, '\0');
  z.s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.s.avail_in = static_cast<uInt>(bytes.size());
  QGRAD_CHECK(bytes.size() == z.s.avail_in, IOError, "gunzip: '", source,
              "' is too large (over 4 GiB compressed)");
  for (;;) {
    z.s.next_out = reinterpret_cast<Bytef*>(chunk.data());
    z.s.avail_out = static_cast<uInt>(chunk.size());
    const int rc = inflate(&z.s, Z_NO_FLUSH);
    out.append(chunk.data(), chunk.size() - z.s.avail_out);
    if (rc == Z_STREAM_END) {
      // Another gzip member may follow (as `cat a.gz b.gz` produces).
      if (z.s.avail_in == 0) break;
      if (z.s.avail_in >= 2 && z.s.next_in[0] == 0x1f && z.s.next_in[1] == 0x8b) {
        inflateReset(&z.s);
        continue;
      }
      throw IOError("gunzip: '" + source + "' has " + std::to_string(z.s.avail_in) +
                    " bytes of trailing garbage after the gzip stream");
    }
    QGRAD_CHECK(rc == Z_OK || rc == Z_BUF_ERROR, IOError, "gunzip: '", source,
                "' is corrupt (zlib: ", z.s.msg ? z.s.msg : zError(rc), ")");
    // Input used up before the end of the stream (no progress possible, or room left for
    // output that never came) means the file was cut short.
    const bool starved = z.s.avail_in == 0 && (rc == Z_BUF_ERROR || z.s.avail_out != 0);
    QGRAD_CHECK(!starved, IOError, "gunzip: '", source,
                "' is truncated (the gzip stream ends early)");
  }
  return out;
}

std::string gzip(const std::string& bytes) {
  DeflateStream z;
  QGRAD_CHECK(z.ok, IOError, "gzip: cannot initialise zlib");
  std::string out;
  std::string chunk(1 << 16, '\0');
  z.s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.s.avail_in = static_cast<uInt>(bytes.size());
  QGRAD_CHECK(bytes.size() == z.s.avail_in, ValueError, "gzip: input over 4 GiB");
  int rc;
  do {
    z.s.next_out = reinterpret_cast<Bytef*>(chunk.data());
    z.s.avail_out = static_cast<uInt>(chunk.size());
    rc = deflate(&z.s, Z_FINISH);
    QGRAD_CHECK(rc == Z_OK || rc == Z_STREAM_END || rc == Z_BUF_ERROR, IOError, "gzip: zlib error ",
                zError(rc));
    out.append(chunk.data(), chunk.size() - z.s.avail_out);
  } while (rc != Z_STREAM_END);
  return out;
}

}  // namespace qgrad::data
