// The deterministic "random" numbers that golden fixtures use instead of stored weights:
// hash_unit(k, n), n floats in [0, 1) from a splitmix64 hash of (k, element index), the same bits
// as gen_zoo.py's hash_unit in Python (the zoo goldens and gen_onnx_import.py's structure-only
// files both fill their weights from it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace qgrad_test {

// Top 24 bits of splitmix64(i + (k + 1) * golden) / 2^24 for i < n (exact in float32).
inline std::vector<float> hash_unit(std::uint64_t k, std::int64_t n) {
  std::vector<float> out(static_cast<std::size_t>(n));
  const std::uint64_t base = (k + 1) * 0x9E3779B97F4A7C15ULL;
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint64_t x = static_cast<std::uint64_t>(i) + base;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    x = x ^ (x >> 31);
    out[static_cast<std::size_t>(i)] = static_cast<float>(x >> 40) * 0x1p-24f;
  }
  return out;
}

}  // namespace qgrad_test
