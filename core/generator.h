// Generator: an explicit, seedable counter-based random source (Philox4x32-10). The same seed
// gives the same numbers on every run and every platform, independent of thread count, because
// element i of a draw always uses counter (offset + i/4).
#pragma once

#include <array>
#include <cstdint>

namespace qgrad {

class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0) : seed_(seed) {}

  std::uint64_t seed() const { return seed_; }
  void manual_seed(std::uint64_t seed) {
    seed_ = seed;
    offset_ = 0;
  }
  // Number of 128-bit blocks consumed so far; with the seed this is the whole state.
  std::uint64_t offset() const { return offset_; }
  void set_offset(std::uint64_t offset) { offset_ = offset; }

  // Reserves `n` 32-bit values and returns the first block index to use.
  std::uint64_t reserve(std::uint64_t n) {
    std::uint64_t first = offset_;
    offset_ += (n + 3) / 4;
    return first;
  }

  // The 4 random words of block `counter` under this generator's seed.
  std::array<std::uint32_t, 4> block(std::uint64_t counter) const;

  // Scalar draws for host-side code (shuffles, augmentation choices).
  std::uint32_t next_u32();
  double next_double();  // uniform in [0, 1)

 private:
  std::uint64_t seed_;
  std::uint64_t offset_ = 0;
};

// Uniform float in [0, 1) from 24 random bits; double in [0, 1) from 53 bits.
inline float uint_to_unit_float(std::uint32_t x) {
  return static_cast<float>(x >> 8) * 0x1p-24f;
}
inline double uint_to_unit_double(std::uint32_t hi, std::uint32_t lo) {
  std::uint64_t v = (static_cast<std::uint64_t>(hi) << 21) ^ (lo >> 11);
  return static_cast<double>(v & ((1ULL << 53) - 1)) * 0x1p-53;
}

}  // namespace qgrad
