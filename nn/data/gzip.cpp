// gzip via zlib's inflate/deflate with the gzip wrapper (windowBits 15 + 16). Inflation is
// incremental and bounded by what the caller asks for (GunzipReader::read).
#include "nn/data/gzip.h"

#include <zlib.h>

#include <algorithm>

#include "core/error.h"

namespace qgrad::data {

namespace {

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

// Output is appended in pieces no larger than what has already arrived (at least kMinChunk, at
// most kMaxChunk), so `out` grows with the data that really arrives, not with what a header
// claims: room is never more than twice the data plus 64 KiB.
constexpr std::size_t kMinChunk = 1 << 16;
constexpr std::size_t kMaxChunk = 1 << 24;

}  // namespace

struct GunzipReader::Stream {
  z_stream s{};
  bool ok = false;
  Stream() { ok = inflateInit2(&s, 15 + 16) == Z_OK; }
  ~Stream() {
    if (ok) inflateEnd(&s);
  }
};

bool is_gzip(const std::string& bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

GunzipReader::GunzipReader(const std::string& bytes, std::string source)
    : z_(std::make_unique<Stream>()), source_(std::move(source)) {
  QGRAD_CHECK(z_->ok, IOError, "gunzip: cannot initialise zlib for '", source_, "'");
  z_->s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z_->s.avail_in = static_cast<uInt>(bytes.size());
  QGRAD_CHECK(bytes.size() == z_->s.avail_in, IOError, "gunzip: '", source_,
              "' is too large (over 4 GiB compressed)");
  QGRAD_CHECK(!bytes.empty(), IOError, "gunzip: '", source_, "' is empty");
}

GunzipReader::~GunzipReader() = default;

std::size_t GunzipReader::read(std::string& out, std::size_t n) {
  z_stream& s = z_->s;
  std::size_t got = 0;
  while (got < n && !ended_) {
    const std::size_t want = std::min(n - got, std::clamp(got, kMinChunk, kMaxChunk));
    const std::size_t old = out.size();
    out.resize(old + want);
    s.next_out = reinterpret_cast<Bytef*>(&out[old]);
    s.avail_out = static_cast<uInt>(want);
    const uInt in_before = s.avail_in;
    const int rc = inflate(&s, Z_NO_FLUSH);
    const std::size_t produced = want - s.avail_out;
    out.resize(old + produced);
    got += produced;
    total_out_ += produced;
    if (rc == Z_STREAM_END) {
      // Another gzip member may follow (as `cat a.gz b.gz` produces).
      if (s.avail_in == 0) {
        ended_ = true;
      } else if (s.avail_in >= 2 && s.next_in[0] == 0x1f && s.next_in[1] == 0x8b) {
        inflateReset(&s);
      } else {
        throw IOError("gunzip: '" + source_ + "' has " + std::to_string(s.avail_in) +
                      " bytes of trailing garbage after the gzip stream");
      }
      continue;
    }
    QGRAD_CHECK(rc == Z_OK || rc == Z_BUF_ERROR, IOError, "gunzip: '", source_,
                "' is corrupt (zlib: ", s.msg ? s.msg : zError(rc), ")");
    // Input used up before the end of the stream (no progress possible, or room left for
    // output that never came) means the file was cut short.
    const bool starved = s.avail_in == 0 && (rc == Z_BUF_ERROR || s.avail_out != 0);
    QGRAD_CHECK(!starved, IOError, "gunzip: '", source_,
                "' is truncated (the gzip stream ends early)");
    // zlib made no progress with input and output room left: never loop on it.
    QGRAD_CHECK(produced != 0 || s.avail_in != in_before, IOError, "gunzip: '", source_,
                "' is corrupt (zlib made no progress)");
  }
  return got;
}

bool GunzipReader::at_end() {
  std::string probe;
  return read(probe, 1) == 0;
}

std::string gunzip(const std::string& bytes, const std::string& source, std::uint64_t max_bytes) {
  GunzipReader z(bytes, source);
  std::string out;
  const std::size_t limit = static_cast<std::size_t>(
      std::min<std::uint64_t>(max_bytes, std::numeric_limits<std::size_t>::max() - 1));
  z.read(out, limit);
  QGRAD_CHECK(z.at_end(), IOError, "gunzip: '", source, "' decompresses to more than ", max_bytes,
              " bytes");
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
    QGRAD_CHECK(rc == Z_OK || rc == Z_BUF_ERROR || rc == Z_STREAM_END, IOError, "gzip: zlib error ",
                zError(rc));
    out.append(chunk.data(), chunk.size() - z.s.avail_out);
  } while (rc != Z_STREAM_END);
  return out;
}

}  // namespace qgrad::data
