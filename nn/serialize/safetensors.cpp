// safetensors writing and strict reading with nlohmann::json.
#include "nn/serialize/safetensors.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "core/file_io.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "qgrad's safetensors code assumes a little-endian host"
#endif

namespace qgrad::serialize {

namespace {

// The reference refuses headers larger than this.
constexpr std::uint64_t kMaxHeaderSize = 100'000'000;

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
                                  const std::map<std::string, std::string>& metadata) {
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
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
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

  // Parse, rejecting duplicate keys at any level (nlohmann would keep the last silently).
  std::vector<std::set<std::string>> key_stack;
  std::string duplicate;
  auto cb = [&](int, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (ev == E::object_start)
      key_stack.emplace_back();
    else if (ev == E::object_end && !key_stack.empty())
      key_stack.pop_back();
    else if (ev == E::key && !key_stack.empty() &&
             !key_stack.back().insert(parsed.get<std::string>()).second && duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text, cb);
  } catch (const nlohmann::json::exception& ex) {
    throw IOError(where + "header is not valid JSON: " + ex.what());
  }
  QGRAD_CHECK(duplicate.empty(), IOError, where, "header has duplicate key '", duplicate, "'");
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
    std::uint64_t numel = 1;
    for (const auto& d : v["shape"]) {
      QGRAD_CHECK(d.is_number_unsigned(), IOError, what,
                  "shape entries must be non-negative integers, got ", d.dump());
      const std::uint64_t dim = d.get<std::uint64_t>();
      QGRAD_CHECK(dim <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
                  IOError, what, "dimension ", dim, " is too large");
      QGRAD_CHECK(!__builtin_mul_overflow(numel, dim, &numel), IOError, what,
                  "shape overflows the element count");
      p.shape.push_back(static_cast<std::int64_t>(dim));
    }
    for (const auto& o : v["data_offsets"])
      QGRAD_CHECK(o.is_number_unsigned(), IOError, what,
                  "data_offsets must be non-negative integers, got ", o.dump());
    p.begin = v["data_offsets"][0].get<std::uint64_t>();
    p.end = v["data_offsets"][1].get<std::uint64_t>();
    QGRAD_CHECK(p.end >= p.begin, IOError, what, "data_offsets [", p.begin, ", ", p.end,
                "] end before begin");
    std::uint64_t nbytes = 0;
    QGRAD_CHECK(!__builtin_mul_overflow(numel, dtype_size(p.dtype), &nbytes), IOError, what,
                "shape overflows the byte count");
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
  for (const auto& p : entries) {
    Tensor t = empty(p.shape, TensorOptions().dtype(p.dtype));
    if (p.end > p.begin) std::memcpy(t.raw_data(), data + p.begin, p.end - p.begin);
    out.tensors.insert(p.name, t);
  }
  return out;
}

void save_safetensors(const std::string& path, const TensorDict& tensors,
                      const std::map<std::string, std::string>& metadata) {
  write_file_atomic(path, serialize_safetensors(tensors, metadata));
}

SafetensorsContents load_safetensors(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  QGRAD_CHECK(f.good(), IOError, "load_safetensors: cannot open '", path, "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  QGRAD_CHECK(!f.bad(), IOError, "load_safetensors: error reading '", path, "'");
  return deserialize_safetensors(ss.str(), path);
}

}  // namespace qgrad::serialize
