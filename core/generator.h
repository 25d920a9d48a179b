/// @file
/// Generator: an explicit, seedable counter-based random source (Philox4x32-10). The same seed
/// gives the same numbers on every run, platform and device, independent of thread count,
/// because element i of a draw always uses counter (offset + i/4) and the block function is
/// host/device.
#pragma once

#include <array>
#include <cstdint>

#include "core/host_device.h"

namespace qgrad {

/// The 4 random words of Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1,
/// 2, 3", SC'11) for block `counter` under `seed`: host/device, so a CUDA kernel drawing element
/// i from block (first + i/4) gets the CPU's numbers.
struct PhiloxBlock {
  std::uint32_t v[4];  ///< the four 32-bit words
};
/// Philox4x32-10 block `counter` under `seed` (see PhiloxBlock).
QGRAD_HD_INLINE PhiloxBlock philox4x32_10(std::uint64_t seed, std::uint64_t counter) {
  constexpr std::uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr std::uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  std::uint32_t c0 = static_cast<std::uint32_t>(counter),
                c1 = static_cast<std::uint32_t>(counter >> 32), c2 = 0u, c3 = 0u;
  std::uint32_t k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = static_cast<std::uint64_t>(kM0) * c0;
    const std::uint64_t p1 = static_cast<std::uint64_t>(kM1) * c2;
    const auto hi0 = static_cast<std::uint32_t>(p0 >> 32), lo0 = static_cast<std::uint32_t>(p0);
    const auto hi1 = static_cast<std::uint32_t>(p1 >> 32), lo1 = static_cast<std::uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  return {{c0, c1, c2, c3}};
}

/// A seedable counter-based random source (Philox4x32-10): the seed and the number of blocks used
/// are its whole state.
class Generator {
 public:
  /// A generator at offset 0 of `seed`.
  explicit Generator(std::uint64_t seed = 0) : seed_(seed) {}

  /// The seed.
  std::uint64_t seed() const { return seed_; }
  /// Restarts the generator: sets the seed and rewinds the offset to 0.
  void manual_seed(std::uint64_t seed) {
    seed_ = seed;
    offset_ = 0;
  }
  /// Number of 128-bit blocks consumed so far; with the seed this is the whole state.
  std::uint64_t offset() const { return offset_; }
  /// Sets the number of blocks consumed (restores a saved state).
  void set_offset(std::uint64_t offset) { offset_ = offset; }

  /// Reserves `n` 32-bit values and returns the first block index to use.
  std::uint64_t reserve(std::uint64_t n) {
    std::uint64_t first = offset_;
    offset_ += (n + 3) / 4;
    return first;
  }

  /// The 4 random words of block `counter` under this generator's seed.
  std::array<std::uint32_t, 4> block(std::uint64_t counter) const;

  /// Scalar draws for host-side code (shuffles, augmentation choices).
  std::uint32_t next_u32();
  double next_double();  ///< uniform in [0, 1)

 private:
  std::uint64_t seed_;
  std::uint64_t offset_ = 0;
};

/// Uniform float in [0, 1) from 24 random bits; double in [0, 1) from 53 bits.
QGRAD_HD_INLINE float uint_to_unit_float(std::uint32_t x) {
  return static_cast<float>(x >> 8) * 0x1p-24f;
}
/// Uniform double in [0, 1) from 53 of the bits of `hi` and `lo`.
QGRAD_HD_INLINE double uint_to_unit_double(std::uint32_t hi, std::uint32_t lo) {
  std::uint64_t v = (static_cast<std::uint64_t>(hi) << 21) ^ (lo >> 11);
  return static_cast<double>(v & ((1ULL << 53) - 1)) * 0x1p-53;
}

}  // namespace qgrad
