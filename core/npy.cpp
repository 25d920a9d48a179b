// .npy reading (a strict parser of the header dict, every size checked before use) and
// writing.
#include "core/npy.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>
#include <utility>

#include <unistd.h>

#include "core/factory.h"
#include "core/file_io.h"

namespace qgrad {

namespace {

// Header dicts longer than this are refused before anything is copied; NumPy's own loader
// refuses more than 10000 bytes by default, and qgrad's dtypes never need more than ~2 KB
// (a 64-dim shape of 20-digit numbers).
constexpr std::size_t kMaxHeaderLen = 1 << 16;
// NumPy's NPY_MAXDIMS (numpy 1.x).
constexpr std::size_t kMaxDims = 64;

// The header dict NumPy writes, a Python literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// parsed strictly: exactly the three keys, a quoted descr, True/False, a tuple of non-negative
// integers (a Python 2 'L' suffix allowed). Every check stays inside the text, so a truncated
// or hostile header is an IOError, never an index past the end.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& path) : h_(text), path_(path) {}

  void parse(std::string& descr, bool& fortran, Shape& shape) {
    bool seen_descr = false, seen_fortran = false, seen_shape = false;
    skip_space();
    expect('{', "'{' opening the header dict");
    for (;;) {
      skip_space();
      if (eat('}')) break;
      const std::string key = quoted("a quoted key or '}'");
      skip_space();
      expect(':', "':' after '" + key + "'");
      skip_space();
      if (key == "descr") {
        check_once(seen_descr, key);
        descr = quoted("a quoted dtype string for 'descr'");
      } else if (key == "fortran_order") {
        check_once(seen_fortran, key);
        fortran = boolean();
      } else if (key == "shape") {
        check_once(seen_shape, key);
        shape = tuple();
      } else {
        fail("unexpected key '" + key + "' (expected only 'descr', 'fortran_order' and 'shape')");
      }
      skip_space();
      if (eat(',')) continue;
      skip_space();
      expect('}', "',' or '}' after the value of '" + key + "'");
      break;
    }
    skip_space();
    if (i_ != h_.size()) fail("unexpected text after the closing '}'");
    const std::pair<bool, const char*> required[] = {
        {seen_descr, "descr"}, {seen_fortran, "fortran_order"}, {seen_shape, "shape"}};
    for (const auto& [seen, key] : required)
      QGRAD_CHECK(seen, IOError, "load_npy: '", path_, "' header has no '", key, "' field");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw IOError("load_npy: '" + path_ + "' has a malformed header: " + what + " at byte " +
                  std::to_string(i_) + " of the header dict");
  }
  void skip_space() {
    while (i_ < h_.size() && (h_[i_] == ' ' || h_[i_] == '\t' || h_[i_] == '\n' || h_[i_] == '\r'))
      ++i_;
  }
  bool eat(char c) {
    if (i_ < h_.size() && h_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c, const std::string& what) {
    if (!eat(c)) fail("expected " + what);
  }
  void check_once(bool& seen, const std::string& key) {
    if (seen) fail("duplicate key '" + key + "'");
    seen = true;
  }
  std::string quoted(const std::string& what) {
    if (i_ >= h_.size() || (h_[i_] != '\'' && h_[i_] != '"')) fail("expected " + what);
    const char q = h_[i_++];
    const std::size_t end = h_.find(q, i_);
    if (end == std::string::npos) fail("unterminated string");
    std::string s = h_.substr(i_, end - i_);
    i_ = end + 1;
    return s;
  }
  bool boolean() {
    const std::pair<const char*, bool> words[] = {{"True", true}, {"False", false}};
    for (const auto& [word, value] : words) {
      const std::size_t n = std::strlen(word);
      if (h_.compare(i_, n, word) == 0) {
        i_ += n;
        return value;
      }
    }
    fail("expected True or False for 'fortran_order'");
  }
  Shape tuple() {
    if (!eat('(')) fail("expected a tuple such as (2, 3) for 'shape'");
    Shape shape;
    for (;;) {
      skip_space();
      if (eat(')')) return shape;
      if (i_ < h_.size() && h_[i_] == '-')
        throw IOError("load_npy: '" + path_ + "' has a negative dimension in its 'shape'");
      if (i_ >= h_.size() || h_[i_] < '0' || h_[i_] > '9')
        fail("expected a non-negative integer or ')' in 'shape'");
      std::int64_t d = 0;
      while (i_ < h_.size() && h_[i_] >= '0' && h_[i_] <= '9') {
        if (__builtin_mul_overflow(d, 10, &d) || __builtin_add_overflow(d, h_[i_] - '0', &d))
          throw IOError("load_npy: '" + path_ + "' has a dimension too large for int64");
        ++i_;
      }
      eat('L');
      if (shape.size() == kMaxDims) fail("more than 64 dimensions in 'shape' (NumPy's limit)");
      shape.push_back(d);
      skip_space();
      if (eat(',')) continue;
      skip_space();
      if (!eat(')')) fail("expected ',' or ')' in 'shape'");
      // A one-element tuple needs its comma in Python; "(3)" is the integer 3.
      if (shape.size() == 1) fail("'shape' (n) is not a tuple; a 1-d shape is written (n,)");
      return shape;
    }
  }

  const std::string& h_;
  const std::string& path_;
  std::size_t i_ = 0;
};

DType descr_dtype(const std::string& d, const std::string& path) {
  if (d == "<f4") return kFloat32;
  if (d == "<f8") return kFloat64;
  // One-byte types have no byte order; NumPy writes '|', other writers sometimes '<'.
  if (d == "|i1" || d == "<i1") return kInt8;
  if (d == "|u1" || d == "|b1" || d == "<u1" || d == "<b1") return kUInt8;
  if (d == "<i2") return kInt16;
  if (d == "<i4") return kInt32;
  if (d == "<i8") return kInt64;
  throw IOError("load_npy: unsupported dtype " + d + " in '" + path + "'");
}

const char* dtype_descr(DType d) {
  switch (d) {
    case DType::Float32:
      return "<f4";
    case DType::Float64:
      return "<f8";
    case DType::Int8:
      return "|i1";
    case DType::UInt8:
      return "|u1";
    case DType::Int16:
      return "<i2";
    case DType::Int32:
      return "<i4";
    case DType::Int64:
      return "<i8";
  }
  return "";
}

}  // namespace

Tensor load_npy(const std::string& path) {
  return parse_npy(read_file(path, "load_npy"), path);
}

Tensor parse_npy(const std::string& data, const std::string& path) {
  QGRAD_CHECK(data.size() >= 10 && data.compare(0, 6, "\x93NUMPY") == 0, IOError, "load_npy: '",
              path, "' is not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(data[6]);
  std::size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(data[8]) |
                 (static_cast<std::size_t>(static_cast<unsigned char>(data[9])) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    QGRAD_CHECK(data.size() >= 12, IOError, "load_npy: '", path, "' is truncated");
    for (int i = 0; i < 4; ++i)
      header_len |= static_cast<std::size_t>(static_cast<unsigned char>(data[8 + i])) << (8 * i);
    header_start = 12;
  } else {
    throw IOError("load_npy: '" + path + "' has unsupported format version " +
                  std::to_string(major));
  }
  // Both bounds before the header is used: the sum cannot overflow (header_len < 2^32).
  QGRAD_CHECK(header_len <= kMaxHeaderLen, IOError, "load_npy: '", path, "' declares a ",
              header_len, "-byte header, more than the ", kMaxHeaderLen,
              "-byte limit (corrupt file?)");
  QGRAD_CHECK(header_len <= data.size() - header_start, IOError, "load_npy: '", path,
              "' is truncated (header of ", header_len, " bytes, file has ",
              data.size() - header_start, " after the length field)");
  std::string descr;
  bool fortran = false;
  Shape shape;
  HeaderParser(data.substr(header_start, header_len), path).parse(descr, fortran, shape);
  const DType dt = descr_dtype(descr, path);
  QGRAD_CHECK(!fortran, IOError, "load_npy: '", path,
              "' is Fortran-ordered; only C order is supported");
  // Size check before allocating: a corrupt header must not trigger a huge allocation.
  const ShapeSize size = shape_size(shape, dtype_size(dt));
  QGRAD_CHECK(size.ok(), IOError, "load_npy: shape ", shape, " in '", path, "' is too large: it ",
              size.problem);
  const std::size_t body = header_start + header_len;
  const auto nbytes = static_cast<std::uint64_t>(size.nbytes);
  QGRAD_CHECK(data.size() - body == nbytes, IOError, "load_npy: '", path, "' holds ",
              data.size() - body, " data bytes, expected ", nbytes, " for shape ", shape, " ",
              dtype_name(dt), " (truncated or corrupt)");
  Tensor t = empty(shape, TensorOptions().dtype(dt));
  if (nbytes) std::memcpy(t.raw_data(), data.data() + body, nbytes);
  return t;
}

void save_npy(const std::string& path, const Tensor& t) {
  QGRAD_CHECK(t.defined(), ValueError, "save_npy: undefined tensor");
  Tensor c = t.detach();
  if (!c.device().is_cpu()) c = c.to(kCPU);
  c = c.contiguous();
  std::ostringstream dict;
  dict << "{'descr': '" << dtype_descr(c.dtype()) << "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < c.shape().size(); ++i)
    dict << c.shape()[i] << (c.shape().size() == 1 ? "," : (i + 1 < c.shape().size() ? ", " : ""));
  dict << "), }";
  std::string header = dict.str();
  // Pad so that magic(6)+version(2)+len(2)+header ends on a 64-byte boundary, newline last.
  std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>((header.size() >> 8) & 0xff));
  out += header;
  out.append(static_cast<const char*>(c.raw_data()),
             static_cast<std::size_t>(c.numel()) * c.element_size());
  write_file_atomic(path, out);
}

}  // namespace qgrad
