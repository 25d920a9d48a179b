/// @file
/// safetensors files (https://github.com/huggingface/safetensors), byte-compatible with the
/// reference implementation: an 8-byte little-endian header length N, N bytes of JSON mapping
/// each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the
/// data buffer after the header) plus an optional "__metadata__" string -> string map, the JSON
/// padded with spaces to a multiple of 8 bytes, then the tensors' bytes, contiguous and
/// little-endian. Tensors are laid out as the reference does: by descending dtype alignment,
/// then by name, so every tensor's data is aligned to its element size.
///
/// Loading validates everything (header length bounds, UTF-8 JSON object nested at most 8 deep
/// without duplicate keys, entry fields, dtype names, shape/offset/size consistency with
/// overflow-checked arithmetic, offsets contiguous and covering the whole buffer with no gaps or
/// overlaps, total file size, checksums) and reports problems as IOError naming the file.
/// Saving is atomic (temporary file + rename).
///
/// Checksums: qgrad stores a CRC32 (zlib's crc32, as 8 lowercase hex digits) of every tensor's
/// data bytes, and one of the other metadata entries, in the header's "__metadata__" under the
/// one key "qgrad.crc32", whose value is a JSON object serialised to a string, e.g.
///   "__metadata__": {"note": "x", "qgrad.crc32":
///                    "{\"__metadata__\":\"1c291ca3\",\"bias\":\"5f637949\"}"}
/// so the metadata stays the str -> str map other readers (Python's safetensors) require. The
/// "__metadata__" entry covers the other metadata entries in key order, each key and value
/// preceded by its byte length as 8 little-endian bytes (a tensor cannot be named
/// "__metadata__"). On load, a file with the key must list exactly its tensors plus
/// "__metadata__", and every CRC must match (IOError naming the file and the tensor or the
/// metadata); files without it (other writers, older qgrad) load as before. The key is removed
/// from the metadata load returns, and callers cannot set it.
#pragma once

#include <map>
#include <string>

#include "core/tensor.h"
#include "nn/ordered_dict.h"

namespace qgrad::serialize {

/// A parsed safetensors file: its tensors and its string metadata.
struct SafetensorsContents {
  TensorDict tensors;                           ///< in file (offset) order
  std::map<std::string, std::string> metadata;  ///< the file's __metadata__ entries
};

/// The metadata key holding the tensors' CRC32s (see above).
inline constexpr const char* kChecksumKey = "qgrad.crc32";
/// Whether a writer stores the checksums: kOmit gives the reference implementation's exact
/// bytes (used to compare against its test vectors).
enum class Checksums { kStore, kOmit };

/// dtype <-> safetensors names: F32 F64 I8 U8 I16 I32 I64.
const char* safetensors_dtype_name(DType dtype);

/// The complete file as bytes. Tensors on any device are copied to the host; names must be
/// non-empty and not "__metadata__", and the metadata must not use kChecksumKey. ValueError on
/// bad input.
std::string serialize_safetensors(const TensorDict& tensors,
                                  const std::map<std::string, std::string>& metadata = {},
                                  Checksums checksums = Checksums::kStore);
/// Parses bytes produced by any conforming writer; `source` names the data in errors.
SafetensorsContents deserialize_safetensors(const std::string& bytes,
                                            const std::string& source = "<memory>");

/// Writes `tensors` and `metadata` to `path` as a safetensors file (replacing it atomically).
void save_safetensors(const std::string& path, const TensorDict& tensors,
                      const std::map<std::string, std::string>& metadata = {},
                      Checksums checksums = Checksums::kStore);
/// Reads the file with read_file (IOError for a missing file, a directory, ...) and parses it.
SafetensorsContents load_safetensors(const std::string& path);

}  // namespace qgrad::serialize
