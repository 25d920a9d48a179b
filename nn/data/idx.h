/// @file
/// IDX files (the MNIST / Fashion-MNIST format, http://yann.lecun.com/exdb/mnist/): a magic of
/// two zero bytes, a type code and the number of dims, the dims as big-endian uint32, then the
/// data big-endian in row-major order. Plain and gzip-compressed files are both accepted
/// (detected by content, not name).
#pragma once

#include <string>

#include "core/tensor.h"

namespace qgrad::data {

/// Reads an IDX file into a CPU tensor: ubyte -> uint8, sbyte -> int8, short and int -> int32,
/// float -> float32, double -> float64. Throws IOError naming the file when it is missing,
/// truncated, has trailing bytes, a bad magic/type code, or corrupt gzip data.
Tensor read_idx(const std::string& path);
/// Parses the bytes of an IDX file, plain or gzip-compressed (told apart by the gzip magic), as
/// read_idx does; `source` names them in errors. A gzip stream is inflated no further than the
/// payload its header declares (plus a one-byte probe for trailing data).
Tensor parse_idx(const std::string& bytes, const std::string& source);
/// Writes `t` (uint8, int8, int32, float32 or float64; at least 1-D) as IDX, gzip-compressed
/// when `gzip` is set. Atomic.
void write_idx(const std::string& path, const Tensor& t, bool gzip = false);

}  // namespace qgrad::data
