// safetensors writing and strict reading: the header through parse_json (depth-bounded, no
// duplicate keys), every size checked before use, per-tensor CRC32s written and verified.
#include "nn/serialize/safetensors.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "core/file_io.h"
#include "core/json_parse.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "qgrad's safetensors code assumes a little-endian host"
#endif

namespace qgrad::serialize {

namespace {

// The reference refuses headers larger than this.
constexpr std::uint64_t kMaxHeaderSize = 100'000'000;

// The header nests 3 levels (file object, tensor entry, shape array); a little slack for
// other writers, none for a hostile file.
constexpr int kMaxHeaderDepth = 8;

// zlib's crc32 of `n` bytes, in pieces that fit its uInt length.
std::uint32_t crc32_of(const char* p, std::size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (n > 0) {
    const uInt piece = static_cast<uInt>(std::min<std::size_t>(n, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(p), piece);
    p += piece;
    n -= piece;
  }
  return static_cast<std::uint32_t>(crc);
}

// The checksum map's entry for the metadata: no tensor can take this name (it is reserved).
constexpr const char* kMetadataCrcName = "__metadata__";

// CRC32 of the metadata entries other than the checksums, in key order, each key and value
// preceded by its length as 8 little-endian bytes (unambiguous whatever the strings hold).
std::uint32_t metadata_crc(const std::map<std::string, std::string>& metadata) {
  std::string flat;
  auto put = [&](const std::string& s) {
    for (int i = 0; i < 8; ++i)
      flat.push_back(static_cast<char>((static_cast<std::uint64_t>(s.size()) >> (8 * i)) & 0xff));
    flat += s;
  };
  for (const auto& [k, v] : metadata)
    if (k != kChecksumKey) {
      put(k);
      put(v);
    }
  return crc32_of(flat.data(), flat.size());
}

std::string crc_hex(std::uint32_t crc) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(crc));
  return buf;
}

// Position of each dtype in the reference's Dtype enum, which is ordered by alignment; the
// writer sorts by it, descending.
int alignment_rank(DType d) {
  switch (d) {
    case DType::UInt8:
      return 1;
    case DType::Int8:
      return 2;
    case DType::Int16:
      return 5;
    case DType::Int32:
      return 9;
    case DType::Float32:
      return 11;
    case DType::Float64:
      return 12;
    case DType::Int64:
      return 13;
  }
  return 0;
}

bool dtype_from_safetensors(const std::string& s, DType& out) {
  if (s == "F32")
    out = kFloat32;
  else if (s == "F64")
    out = kFloat64;
  else if (s == "I8")
    out = kInt8;
  else if (s == "U8")
    out = kUInt8;
  else if (s == "I16")
    out = kInt16;
  else if (s == "I32")
    out = kInt32;
  else if (s == "I64")
    out = kInt64;
  else
    return false;
  return true;
}

bool known_unsupported_dtype(const std::string& s) {
  static const std::set<std::string> names = {"BOOL", "F8_E5M2", "F8_E4M3", "U16",
                                              "F16",  "BF16",    "U32",     "U64"};
  return names.count(s) != 0;
}

struct Parsed {
  std::string name;
  DType dtype;
  Shape shape;
  std::uint64_t begin, end;
};

// Checks the metadata and every tensor's bytes against the CRC32s stored under kChecksumKey
// (when the file has that key; files from other writers have none), then drops that entry from
// the user's metadata.
void verify_checksums(const std::vector<Parsed>& entries, const char* data,
                      const std::string& where, std::map<std::string, std::string>& metadata) {
  auto m = metadata.find(kChecksumKey);
  if (m == metadata.end()) return;
  const std::string what = where + "metadata '" + kChecksumKey + "'";
  const nlohmann::json crcs = parse_json(m->second, what, JsonLimits{1});
  QGRAD_CHECK(crcs.is_object(), IOError, what, " must be a JSON object {tensor name: crc32}, got ",
              describe_json(crcs));
  std::set<std::string> names = {kMetadataCrcName};
  for (const auto& p : entries) names.insert(p.name);
  for (auto it = crcs.begin(); it != crcs.end(); ++it) {
    QGRAD_CHECK(names.count(it.key()), IOError, what, " has a checksum for tensor '", it.key(),
                "', which the file does not hold");
    const bool hex8 =
        it.value().is_string() && it.value().get<std::string>().size() == 8 &&
        it.value().get<std::string>().find_first_not_of("0123456789abcdef") == std::string::npos;
    QGRAD_CHECK(hex8, IOError, what, ": the checksum of '", it.key(),
                "' must be 8 lowercase hex digits, got ", describe_json(it.value()));
  }
  auto stored = [&](const std::string& name) {
    auto c = crcs.find(name);
    QGRAD_CHECK(c != crcs.end(), IOError, what, " has no checksum for ",
                name == kMetadataCrcName ? "the metadata" : "tensor '" + name + "'");
    return c->get<std::string>();
  };
  const std::string meta_stored = stored(kMetadataCrcName);
  const std::string meta_computed = crc_hex(metadata_crc(metadata));
  QGRAD_CHECK(meta_stored == meta_computed, IOError, where,
              "the metadata fails its CRC32 check (stored ", meta_stored, ", computed ",
              meta_computed, "): the file is corrupt");
  for (const auto& p : entries) {
    const std::string expected = stored(p.name);
    const std::string computed =
        crc_hex(crc32_of(data + p.begin, static_cast<std::size_t>(p.end - p.begin)));
    QGRAD_CHECK(expected == computed, IOError, where, "tensor '", p.name,
                "': data fails its CRC32 check (stored ", expected, ", computed ", computed,
                "): the file is corrupt");
  }
  metadata.erase(m);
}

}  // namespace

const char* safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return "F32";
    case DType::Float64:
      return "F64";
    case DType::Int8:
      return "I8";
    case DType::UInt8:
      return "U8";
    case DType::Int16:
      return "I16";
    case DType::Int32:
      return "I32";
    case DType::Int64:
      return "I64";
  }
  throw DTypeError("safetensors: unknown dtype");
}

std::string serialize_safetensors(const TensorDict& tensors,
                                  const std::map<std::string, std::string>& metadata,
                                  Checksums checksums) {
  struct Entry {
    std::string name;
    Tensor host;
  };
  std::vector<Entry> entries;
  {
    NoGradGuard no_grad;
    for (const auto& it : tensors) {
      QGRAD_CHECK(!it.key.empty(), ValueError, "save_safetensors: tensor names must not be empty");
      QGRAD_CHECK(it.key != "__metadata__", ValueError,
                  "save_safetensors: '__metadata__' is reserved and cannot name a tensor");
      QGRAD_CHECK(it.value.defined(), ValueError, "save_safetensors: tensor '", it.key,
                  "' is undefined");
      Tensor h = it.value.detach();
      if (!h.device().is_cpu()) h = h.to(kCPU);
      entries.push_back({it.key, h.contiguous()});
    }
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    const int ra = alignment_rank(a.host.dtype()), rb = alignment_rank(b.host.dtype());
    if (ra != rb) return ra > rb;
    return a.name < b.name;
  });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  std::map<std::string, std::string> all_metadata = metadata;
  QGRAD_CHECK(!metadata.count(kChecksumKey), ValueError, "save_safetensors: metadata key '",
              kChecksumKey, "' is reserved for qgrad's tensor checksums");
  if (checksums == Checksums::kStore && (!entries.empty() || !metadata.empty())) {
    nlohmann::ordered_json crcs = nlohmann::ordered_json::object();
    crcs[kMetadataCrcName] = crc_hex(metadata_crc(metadata));
    for (const auto& e : entries)
      crcs[e.name] =
          crc_hex(crc32_of(static_cast<const char*>(e.host.raw_data()),
                           static_cast<std::size_t>(e.host.numel()) * e.host.element_size()));
    try {
      all_metadata[kChecksumKey] = crcs.dump();
    } catch (const nlohmann::json::exception& ex) {
      throw ValueError(std::string("save_safetensors: cannot encode the checksums (names must be "
                                   "valid UTF-8): ") +
                       ex.what());
    }
  }
  if (!all_metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : all_metadata) meta[k] = v;
    header["__metadata__"] = meta;
  }
  std::uint64_t offset = 0;
  for (const auto& e : entries) {
    const std::uint64_t n = static_cast<std::uint64_t>(e.host.numel()) * e.host.element_size();
    nlohmann::ordered_json info = nlohmann::ordered_json::object();
    info["dtype"] = safetensors_dtype_name(e.host.dtype());
    info["shape"] = e.host.shape();
    info["data_offsets"] = {offset, offset + n};
    header[e.name] = info;
    offset += n;
  }
  std::string json;
  try {
    json = header.dump();
  } catch (const nlohmann::json::exception& ex) {
    throw ValueError(std::string("save_safetensors: cannot encode the header (names and metadata "
                                 "must be valid UTF-8): ") +
                     ex.what());
  }
  json.append((8 - json.size() % 8) % 8, ' ');  // the reference's 8-byte alignment

  std::string out;
  out.reserve(8 + json.size() + offset);
  const std::uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += json;
  for (const auto& e : entries)
    out.append(static_cast<const char*>(e.host.raw_data()),
               static_cast<std::size_t>(e.host.numel()) * e.host.element_size());
  return out;
}

SafetensorsContents deserialize_safetensors(const std::string& bytes, const std::string& source) {
  const std::string where = "load_safetensors: '" + source + "': ";
  QGRAD_CHECK(bytes.size() >= 8, IOError, where, "file is ", bytes.size(),
              " bytes, too small for the 8-byte header length (truncated?)");
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]))
         << (8 * i);
  QGRAD_CHECK(n <= kMaxHeaderSize, IOError, where, "header length ", n,
              " exceeds the 100000000-byte limit (corrupt file?)");
  QGRAD_CHECK(8 + n <= bytes.size(), IOError, where, "header length ", n, " exceeds the ",
              bytes.size() - 8, " bytes after the length field (truncated?)");
  const std::string text = bytes.substr(8, static_cast<std::size_t>(n));
  QGRAD_CHECK(!text.empty() && text[0] == '{', IOError, where,
              "header does not start with '{' (not a safetensors file?)");

  const nlohmann::json header = parse_json(text, where + "header", JsonLimits{kMaxHeaderDepth});
  QGRAD_CHECK(header.is_object(), IOError, where, "header is not a JSON object");

  SafetensorsContents out;
  std::vector<Parsed> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& v = it.value();
    if (name == "__metadata__") {
      QGRAD_CHECK(v.is_object(), IOError, where, "'__metadata__' must be an object of strings");
      for (auto m = v.begin(); m != v.end(); ++m) {
        QGRAD_CHECK(m.value().is_string(), IOError, where, "'__metadata__' entry '", m.key(),
                    "' is not a string");
        out.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string what = where + "tensor '" + name + "': ";
    QGRAD_CHECK(v.is_object(), IOError, what, "entry is not an object");
    QGRAD_CHECK(v.contains("dtype") && v["dtype"].is_string(), IOError, what,
                "missing or non-string 'dtype'");
    QGRAD_CHECK(v.contains("shape") && v["shape"].is_array(), IOError, what,
                "missing or non-array 'shape'");
    QGRAD_CHECK(
        v.contains("data_offsets") && v["data_offsets"].is_array() && v["data_offsets"].size() == 2,
        IOError, what, "'data_offsets' must be an array [begin, end]");
    Parsed p;
    p.name = name;
    const std::string dt = v["dtype"].get<std::string>();
    if (!dtype_from_safetensors(dt, p.dtype)) {
      QGRAD_CHECK(!known_unsupported_dtype(dt), IOError, what, "dtype ", dt,
                  " is not supported by qgrad (F32, F64, I8, U8, I16, I32, I64)");
      throw IOError(what + "unknown dtype '" + dt + "'");
    }
    for (const auto& d : v["shape"]) {
      QGRAD_CHECK(d.is_number_unsigned(), IOError, what,
                  "shape entries must be non-negative integers, got ", describe_json(d));
      const std::uint64_t dim = d.get<std::uint64_t>();
      QGRAD_CHECK(dim <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
                  IOError, what, "dimension ", dim, " is too large");
      p.shape.push_back(static_cast<std::int64_t>(dim));
    }
    // The one checked validation empty() uses too: a leading 0 cannot hide huge later dims.
    const ShapeSize size = shape_size(p.shape, dtype_size(p.dtype));
    QGRAD_CHECK(size.ok(), IOError, what, "shape ", p.shape, " ", size.problem);
    for (const auto& o : v["data_offsets"])
      QGRAD_CHECK(o.is_number_unsigned(), IOError, what,
                  "data_offsets must be non-negative integers, got ", describe_json(o));
    p.begin = v["data_offsets"][0].get<std::uint64_t>();
    p.end = v["data_offsets"][1].get<std::uint64_t>();
    QGRAD_CHECK(p.end >= p.begin, IOError, what, "data_offsets [", p.begin, ", ", p.end,
                "] end before begin");
    const auto nbytes = static_cast<std::uint64_t>(size.nbytes);
    QGRAD_CHECK(p.end - p.begin == nbytes, IOError, what, "shape ", p.shape, " of ", dt, " needs ",
                nbytes, " bytes but data_offsets [", p.begin, ", ", p.end, "] hold ",
                p.end - p.begin);
    entries.push_back(std::move(p));
  }

  std::sort(entries.begin(), entries.end(), [](const Parsed& a, const Parsed& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const std::uint64_t data_size = bytes.size() - 8 - n;
  std::uint64_t expected = 0;
  for (const auto& p : entries) {
    QGRAD_CHECK(p.begin >= expected, IOError, where, "tensor '", p.name, "': data_offsets [",
                p.begin, ", ", p.end, "] overlap the previous tensor, which ends at byte ",
                expected);
    QGRAD_CHECK(p.begin == expected, IOError, where, "tensor '", p.name, "': data_offsets [",
                p.begin, ", ", p.end, "] leave a gap after byte ", expected,
                " (tensors must be stored back to back)");
    QGRAD_CHECK(p.end <= data_size, IOError, where, "tensor '", p.name, "': data_offsets [",
                p.begin, ", ", p.end, "] run past the end of the data (", data_size,
                " bytes; truncated?)");
    expected = p.end;
  }
  QGRAD_CHECK(expected == data_size, IOError, where, "the tensors cover ", expected,
              " bytes but the data section holds ", data_size, " bytes");

  const char* data = bytes.data() + 8 + n;
  verify_checksums(entries, data, where, out.metadata);
  for (const auto& p : entries) {
    Tensor t = empty(p.shape, TensorOptions().dtype(p.dtype));
    if (p.end > p.begin) std::memcpy(t.raw_data(), data + p.begin, p.end - p.begin);
    out.tensors.insert(p.name, t);
  }
  return out;
}

void save_safetensors(const std::string& path, const TensorDict& tensors,
                      const std::map<std::string, std::string>& metadata, Checksums checksums) {
  write_file_atomic(path, serialize_safetensors(tensors, metadata, checksums));
}

SafetensorsContents load_safetensors(const std::string& path) {
  return deserialize_safetensors(read_file(path, "load_safetensors"), path);
}

}  // namespace qgrad::serialize
