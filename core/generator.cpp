// Generator's host-side draws over the Philox4x32-10 block function of generator.h.
#include "core/generator.h"

namespace qgrad {

std::array<std::uint32_t, 4> Generator::block(std::uint64_t counter) const {
  const PhiloxBlock b = philox4x32_10(seed_, counter);
  return {b.v[0], b.v[1], b.v[2], b.v[3]};
}

std::uint32_t Generator::next_u32() {
  return block(reserve(1))[0];
}

double Generator::next_double() {
  auto b = block(reserve(4));
  return uint_to_unit_double(b[0], b[1]);
}

}  // namespace qgrad
