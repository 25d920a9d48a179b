// Outputs<R0, R1, ...>: the element types of the outputs that cpu::map_outputs and
// cuda::map_outputs write in one pass (a fake quantizer's value and its mask), named apart from
// the inputs' types, which the maps take as a pack of their own.
#pragma once

#include <cstddef>

namespace qgrad {

template <typename R0, typename... Rs>
struct Outputs {
  static constexpr std::size_t size = 1 + sizeof...(Rs);
};

}  // namespace qgrad
