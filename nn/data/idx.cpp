// IDX reading/writing: header validation (every size checked before use), big-endian
// conversion, gzip via nn/data/gzip (inflated no further than the header declares).
#include "nn/data/idx.h"

#include <cstring>

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

// The header: magic, type, dims, and the payload size they declare, all checked.
struct IdxHeader {
  IdxType type{};
  std::size_t ndim = 0;
  Shape shape;
  std::uint64_t count = 0;       // elements
  std::uint64_t data_bytes = 0;  // payload bytes in the file
};

// The first 4 bytes: `u` holds at least 4.
void decode_magic(const unsigned char* u, const std::string& where, IdxHeader& h) {
  QGRAD_CHECK(u[0] == 0 && u[1] == 0, IOError, where,
              "bad magic: the first two bytes must be zero (not an IDX file?)");
  QGRAD_CHECK(idx_type(u[2], h.type), IOError, where, "unknown IDX type code 0x", std::hex,
              static_cast<int>(u[2]));
  h.ndim = u[3];
  QGRAD_CHECK(h.ndim >= 1, IOError, where, "IDX file declares 0 dimensions");
}

// The dims: `dims` holds the 4 * h.ndim bytes after the magic.
void decode_dims(const unsigned char* dims, const std::string& where, IdxHeader& h) {
  for (std::size_t d = 0; d < h.ndim; ++d)
    h.shape.push_back(static_cast<std::int64_t>(read_be32(dims + 4 * d)));
  // One checked validation of the shape for the tensor (its dtype is at least as wide as the
  // file's element), so the file's byte count below cannot overflow either.
  const ShapeSize size = shape_size(h.shape, dtype_size(h.type.dtype));
  QGRAD_CHECK(size.ok(), IOError, where, "dims ", h.shape, " are too large: the shape ",
              size.problem);
  h.count = static_cast<std::uint64_t>(size.numel);
  h.data_bytes = h.count * h.type.file_size;
}

Tensor decode_payload(const unsigned char* src, const IdxHeader& h) {
  Tensor t = empty(h.shape, TensorOptions().dtype(h.type.dtype));
  if (h.type.file_size == 2) {  // int16 -> int32
    auto* dst = t.data_ptr<std::int32_t>();
    for (std::uint64_t i = 0; i < h.count; ++i)
      dst[i] = static_cast<std::int16_t>((src[2 * i] << 8) | src[2 * i + 1]);
    return t;
  }
  auto* dst = static_cast<unsigned char*>(t.raw_data());
  if (h.data_bytes) std::memcpy(dst, src, h.data_bytes);
  swap_elements(dst, h.count, h.type.file_size);
  return t;
}

std::string size_mismatch(const IdxHeader& h, std::uint64_t have, const char* what) {
  return detail::concat("dims ", h.shape, " need ", h.data_bytes, " data bytes but the ", what,
                        " has ", have, have < h.data_bytes ? " (truncated)" : " (trailing bytes)");
}

// A gzip-compressed file, inflated in steps: the 4 magic bytes, then the dims, then at most the
// payload they declare, then a one-byte probe for trailing data. Nothing is inflated beyond
// what the header declares, so a small file that expands to gigabytes is refused early.
Tensor parse_idx_gzip(const std::string& bytes, const std::string& source,
                      const std::string& where) {
  GunzipReader z(bytes, source);
  std::string head;
  z.read(head, 4);
  QGRAD_CHECK(head.size() == 4, IOError, where, "decompressed data is ", head.size(),
              " bytes, too short for the 4-byte IDX magic (truncated?)");
  IdxHeader h;
  decode_magic(reinterpret_cast<const unsigned char*>(head.data()), where, h);
  z.read(head, 4 * h.ndim);
  QGRAD_CHECK(head.size() == 4 + 4 * h.ndim, IOError, where,
              "decompressed data ends inside the dimension list (", h.ndim, " dims need ",
              4 + 4 * h.ndim, " header bytes, it has ", head.size(), ")");
  decode_dims(reinterpret_cast<const unsigned char*>(head.data()) + 4, where, h);
  std::string payload;
  z.read(payload, static_cast<std::size_t>(h.data_bytes));
  QGRAD_CHECK(payload.size() == h.data_bytes, IOError, where,
              size_mismatch(h, payload.size(), "decompressed data"));
  QGRAD_CHECK(z.at_end(), IOError, where, "dims ", h.shape, " need ", h.data_bytes,
              " data bytes but the decompressed data has more (trailing bytes)");
  return decode_payload(reinterpret_cast<const unsigned char*>(payload.data()), h);
}

}  // namespace

Tensor parse_idx(const std::string& bytes, const std::string& source) {
  const std::string where = "read_idx: '" + source + "': ";
  if (is_gzip(bytes)) return parse_idx_gzip(bytes, source, where);
  QGRAD_CHECK(bytes.size() >= 4, IOError, where, "file is ", bytes.size(),
              " bytes, too short for the 4-byte IDX magic (truncated?)");
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  IdxHeader h;
  decode_magic(u, where, h);
  const std::size_t header = 4 + 4 * h.ndim;
  QGRAD_CHECK(bytes.size() >= header, IOError, where, "file ends inside the dimension list (",
              h.ndim, " dims need ", header, " header bytes, file has ", bytes.size(), ")");
  decode_dims(u + 4, where, h);
  const std::uint64_t have = bytes.size() - header;
  QGRAD_CHECK(have == h.data_bytes, IOError, where, size_mismatch(h, have, "file"));
  return decode_payload(u + header, h);
}

Tensor read_idx(const std::string& path) {
  return parse_idx(read_file(path, "read_idx"), path);
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
