// .npy reading and writing.
#include "core/npy.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "core/factory.h"
#include "core/file_io.h"

namespace qgrad {

namespace {

// Extracts the value text of `'key': value` in the header dict.
std::string header_field(const std::string& h, const std::string& key, const std::string& path) {
  auto k = h.find("'" + key + "'");
  QGRAD_CHECK(k != std::string::npos, IOError, "load_npy: '", path, "' header has no '", key,
              "' field");
  auto colon = h.find(':', k);
  QGRAD_CHECK(colon != std::string::npos, IOError, "load_npy: malformed header in '", path, "'");
  std::size_t start = colon + 1;
  while (start < h.size() && h[start] == ' ') ++start;
  std::size_t end = start;
  if (h[start] == '(') {
    end = h.find(')', start);
    QGRAD_CHECK(end != std::string::npos, IOError, "load_npy: malformed shape in '", path, "'");
    return h.substr(start, end - start + 1);
  }
  while (end < h.size() && h[end] != ',' && h[end] != '}') ++end;
  return h.substr(start, end - start);
}

DType descr_dtype(std::string d, const std::string& path) {
  if (d.size() >= 2 && d.front() == '\'' && d.back() == '\'') d = d.substr(1, d.size() - 2);
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
  QGRAD_CHECK(header_start + header_len <= data.size(), IOError, "load_npy: '", path,
              "' is truncated (header)");
  const std::string h = data.substr(header_start, header_len);
  const DType dt = descr_dtype(header_field(h, "descr", path), path);
  QGRAD_CHECK(header_field(h, "fortran_order", path).find("False") != std::string::npos, IOError,
              "load_npy: '", path, "' is Fortran-ordered; only C order is supported");
  std::string sh = header_field(h, "shape", path);
  Shape shape;
  {
    std::string inner = sh.substr(1, sh.size() - 2);
    std::stringstream ss(inner);
    std::string tok;
    while (std::getline(ss, tok, ',')) {
      auto b = tok.find_first_not_of(" L");
      if (b == std::string::npos) continue;
      try {
        shape.push_back(std::stoll(tok.substr(b)));
      } catch (const std::exception&) {
        throw IOError("load_npy: malformed shape " + sh + " in '" + path + "'");
      }
      QGRAD_CHECK(shape.back() >= 0, IOError, "load_npy: negative dimension in '", path, "'");
    }
  }
  // Size check before allocating: a corrupt header must not trigger a huge allocation.
  const std::size_t body = header_start + header_len;
  std::uint64_t nbytes = dtype_size(dt);
  for (auto d : shape)
    QGRAD_CHECK(!__builtin_mul_overflow(nbytes, static_cast<std::uint64_t>(d), &nbytes), IOError,
                "load_npy: shape ", shape, " in '", path, "' is too large");
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
