/// @file
/// NumPy .npy files (format 1.0/2.0/3.0, little-endian, C order): load into a Tensor, save a
/// Tensor. Saving is atomic (temporary file + rename). Used for golden fixtures and by users.
#pragma once

#include <string>

#include "core/tensor.h"

namespace qgrad {

/// Supports <f4 <f8 |i1 |u1 <i4 <i8 and |b1 (loaded as uint8). Throws IOError naming the file on
/// a missing, truncated or malformed file.
Tensor load_npy(const std::string& path);
/// The same from the bytes of a .npy file; `source` names it in errors.
Tensor parse_npy(const std::string& bytes, const std::string& source);
/// Writes `t` to `path` as a .npy file.
void save_npy(const std::string& path, const Tensor& t);

}  // namespace qgrad
