/// @file
/// KernelTableKey: the typed handle of one kernel table, in its own header so that the headers
/// declaring kernel signatures below dispatch.h (the allocator's) can declare their keys too.
#pragma once

#include <string_view>

namespace qgrad {

/// A typed handle to one kernel table, declared as an inline constexpr beside its op's kernel
/// signature (`inline constexpr KernelTableKey<BinaryKernel> kBinaryKernels{"binary", "add sub
/// ..."}`): registration and dispatch both go through it, so the signature is checked by the
/// compiler, not found by a string and a cast. `ops` names the user-facing ops that run on the
/// table (space-separated): the catalogue that supports() answers from and the cross-device test
/// iterates over is collected from the keys of the registered tables, never written beside them.
template <typename Fn>
struct KernelTableKey {
  std::string_view name;  ///< the table's name
  std::string_view ops;   ///< the user-facing ops that run on the table, space-separated
};

}  // namespace qgrad
