// NumPy .npy files (format 1.0/2.0/3.0, little-endian, C order): load into a Tensor, save a
// Tensor. Saving is atomic (temporary file + rename). Used for golden fixtures and by users.
#pragma once

#include <string>

#include "core/tensor.h"

namespace qgrad {

// Supports <f4 <f8 |i1 |u1 <i4 <i8 and |b1 (loaded as uint8). Throws IOError naming the file on
// a missing, truncated or malformed file.
Tensor load_npy(const std::string& path);
void save_npy(const std::string& path, const Tensor& t);

// Writes `bytes` to `path` through a temporary file in the same directory and a rename, so a
// crash never leaves a half-written file.
void write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace qgrad
