// safetensors files (https://github.com/huggingface/safetensors), byte-compatible with the
// reference implementation: an 8-byte little-endian header length N, N bytes of JSON mapping
// each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the
// data buffer after the header) plus an optional "__metadata__" string -> string map, the JSON
// padded with spaces to a multiple of 8 bytes, then the tensors' bytes, contiguous and
// little-endian. Tensors are laid out as the reference does: by descending dtype alignment,
// then by name, so every tensor's data is aligned to its element size.
//
// Loading validates everything (header length bounds, UTF-8 JSON object, entry fields, dtype
// names, shape/offset/size consistency, offsets contiguous and covering the whole buffer with
// no gaps or overlaps, total file size) and reports problems as IOError naming the file.
// Saving is atomic (temporary file + rename).
#pragma once

#include <map>
#include <string>

#include "core/tensor.h"
#include "nn/ordered_dict.h"

namespace qgrad::serialize {

struct SafetensorsContents {
  TensorDict tensors;  // in file (offset) order
  std::map<std::string, std::string> metadata;
};

// dtype <-> safetensors names: F32 F64 I8 U8 I16 I32 I64.
const char* safetensors_dtype_name(DType dtype);

// The complete file as bytes. Tensors on any device are copied to the host; names must be
// non-empty and not "__metadata__". ValueError on bad input.
std::string serialize_safetensors(const TensorDict& tensors,
                                  const std::map<std::string, std::string>& metadata = {});
// Parses bytes produced by any conforming writer; `source` names the data in errors.
SafetensorsContents deserialize_safetensors(const std::string& bytes,
                                            const std::string& source = "<memory>");

void save_safetensors(const std::string& path, const TensorDict& tensors,
                      const std::map<std::string, std::string>& metadata = {});
SafetensorsContents load_safetensors(const std::string& path);

}  // namespace qgrad::serialize
