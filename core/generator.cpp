// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11).
#include "core/generator.h"

namespace qgrad {

namespace {
constexpr std::uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
constexpr std::uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;

inline void mulhilo(std::uint32_t a, std::uint32_t b, std::uint32_t& hi, std::uint32_t& lo) {
  std::uint64_t p = static_cast<std::uint64_t>(a) * b;
  hi = static_cast<std::uint32_t>(p >> 32);
  lo = static_cast<std::uint32_t>(p);
}
}  // namespace

std::array<std::uint32_t, 4> Generator::block(std::uint64_t counter) const {
  std::array<std::uint32_t, 4> c = {static_cast<std::uint32_t>(counter),
                                    static_cast<std::uint32_t>(counter >> 32), 0u, 0u};
  std::uint32_t k0 = static_cast<std::uint32_t>(seed_),
                k1 = static_cast<std::uint32_t>(seed_ >> 32);
  for (int round = 0; round < 10; ++round) {
    std::uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kM0, c[0], hi0, lo0);
    mulhilo(kM1, c[2], hi1, lo1);
    c = {hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0};
    k0 += kW0;
    k1 += kW1;
  }
  return c;
}

std::uint32_t Generator::next_u32() {
  return block(reserve(1))[0];
}

double Generator::next_double() {
  auto b = block(reserve(4));
  return uint_to_unit_double(b[0], b[1]);
}

}  // namespace qgrad
