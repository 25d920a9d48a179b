// IDX reading/writing: header validation, big-endian conversion, gzip via nn/data/gzip.
#include "nn/data/idx.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "core/factory.h"
#include "core/file_io.h"
#include "nn/data/gzip.h"

namespace qgrad::data {

namespace {

std::uint32_t read_be32(const unsigned char* p) {
  return (static_cast<std::uint32_t>(p[0]) << 24) | (static_cast<std::uint32_t>(p[1]) << 16) |
         (static_cast<std::uint32_t>(p[2]) << 8) | static_cast<std::uint32_t>(p[3]);
}

// Byte-swaps `n` elements of `size` bytes in place (big-endian file <-> little-endian host).
void swap_elements(unsigned char* p, std::size_t n, std::size_t size) {
  if (size == 1) return;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t a = 0, b = size - 1; a < b; ++a, --b)
      std::swap(p[i * size + a], p[i * size + b]);
}

struct IdxType {
  DType dtype;
  std::size_t file_size;  // bytes per element in the file
};

bool idx_type(unsigned char code, IdxType& t) {
  switch (code) {
    case 0x08:
      t = {kUInt8, 1};
      return true;
    case 0x09:
      t = {kInt8, 1};
      return true;
    case 0x0B:
      t = {kInt32, 2};
      return true;
    case 0x0C:
      t = {kInt32, 4};
      return true;
    case 0x0D:
      t = {kFloat32, 4};
      return true;
    case 0x0E:
      t = {kFloat64, 8};
      return true;
    default:
      return false;
  }
}

}  // namespace

Tensor parse_idx(const std::string& bytes, const std::string& source) {
  const std::string where = "read_idx: '" + source + "': ";
  QGRAD_CHECK(bytes.size() >= 4, IOError, where, "file is ", bytes.size(),
              " bytes, too short for the 4-byte IDX magic (truncated?)");
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  QGRAD_CHECK(u[0] == 0 && u[1] == 0, IOError, where,
              "bad magic: the first two bytes must be zero (not an IDX file?)");
  IdxType type{};
  QGRAD_CHECK(idx_type(u[2], type), IOError, where, "unknown IDX type code 0x", std::hex,
              static_cast<int>(u[2]));
  const std::size_t ndim = u[3];
  QGRAD_CHECK(ndim >= 1, IOError, where, "IDX file declares 0 dimensions");
  const std::size_t header = 4 + 4 * ndim;
  QGRAD_CHECK(bytes.size() >= header, IOError, where, "file ends inside the dimension list (", ndim,
              " dims need ", header, " header bytes, file has ", bytes.size(), ")");
  Shape shape;
  std::uint64_t count = 1;
  for (std::size_t d = 0; d < ndim; ++d) {
    const std::uint32_t n = read_be32(u + 4 + 4 * d);
    shape.push_back(static_cast<std::int64_t>(n));
    QGRAD_CHECK(!__builtin_mul_overflow(count, static_cast<std::uint64_t>(n), &count), IOError,
                where, "dims ", shape, " overflow");
  }
  std::uint64_t expected = 0;
  QGRAD_CHECK(!__builtin_mul_overflow(count, type.file_size, &expected), IOError, where, "dims ",
              shape, " overflow");
  const std::uint64_t have = bytes.size() - header;
  QGRAD_CHECK(have == expected, IOError, where, "dims ", shape, " need ", expected,
              " data bytes but the file has ", have,
              have < expected ? " (truncated)" : " (trailing bytes)");

  Tensor t = empty(shape, TensorOptions().dtype(type.dtype));
  const auto* src = u + header;
  if (type.file_size == 2) {  // int16 -> int32
    auto* dst = t.data_ptr<std::int32_t>();
    for (std::uint64_t i = 0; i < count; ++i)
      dst[i] = static_cast<std::int16_t>((src[2 * i] << 8) | src[2 * i + 1]);
    return t;
  }
  auto* dst = static_cast<unsigned char*>(t.raw_data());
  if (expected) std::memcpy(dst, src, expected);
  swap_elements(dst, count, type.file_size);
  return t;
}

Tensor read_idx(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  QGRAD_CHECK(f.good(), IOError, "read_idx: cannot open '", path, "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  QGRAD_CHECK(!f.bad(), IOError, "read_idx: error reading '", path, "'");
  std::string bytes = ss.str();
  if (is_gzip(bytes)) bytes = gunzip(bytes, path);
  return parse_idx(bytes, path);
}

void write_idx(const std::string& path, const Tensor& t, bool compress) {
  QGRAD_CHECK(t.defined(), ValueError, "write_idx: tensor is undefined");
  QGRAD_CHECK(t.dim() >= 1 && t.dim() <= 255, ShapeError,
              "write_idx: expected 1 to 255 dims, got shape ", t.shape());
  unsigned char code = 0;
  switch (t.dtype()) {
    case DType::UInt8:
      code = 0x08;
      break;
    case DType::Int8:
      code = 0x09;
      break;
    case DType::Int32:
      code = 0x0C;
      break;
    case DType::Float32:
      code = 0x0D;
      break;
    case DType::Float64:
      code = 0x0E;
      break;
    default:
      throw DTypeError(std::string("write_idx: IDX has no ") + dtype_name(t.dtype()) +
                       " type (use uint8, int8, int32, float32 or float64)");
  }
  for (auto d : t.shape())
    QGRAD_CHECK(d <= 0xFFFFFFFFLL, ShapeError, "write_idx: dimension ", d,
                " does not fit IDX's uint32");
  Tensor c = t.detach();
  if (!c.device().is_cpu()) c = c.to(kCPU);
  c = c.contiguous();
  std::string out;
  out.push_back(0);
  out.push_back(0);
  out.push_back(static_cast<char>(code));
  out.push_back(static_cast<char>(t.dim()));
  for (auto d : t.shape())
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>((d >> s) & 0xff));
  const std::size_t esize = c.element_size(), n = static_cast<std::size_t>(c.numel());
  std::string body(static_cast<const char*>(c.raw_data()), n * esize);
  swap_elements(reinterpret_cast<unsigned char*>(body.data()), n, esize);
  out += body;
  write_file_atomic(path, compress ? gzip(out) : out);
}

}  // namespace qgrad::data
