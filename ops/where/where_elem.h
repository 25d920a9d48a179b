// The element-wise math of where and the logical ops, written once for both devices (QGRAD_HD
// functors driven by cpu::map in where_cpu.cpp and cuda::map in where_cuda.cu). Masks are uint8,
// nonzero meaning true.
#pragma once

#include <cstdint>

#include "core/host_device.h"
#include "ops/where/where_kernels.h"

namespace qgrad::where_elem {

// Both operands arrive already loaded, so the CPU select needs no masked loads.
template <typename T>
struct Select {
  QGRAD_HD T operator()(std::uint8_t c, T a, T b) const { return c ? a : b; }
};

template <LogicalOp Op>
struct Logical {
  QGRAD_HD std::uint8_t operator()(std::uint8_t a, std::uint8_t b) const {
    const bool x = a != 0, y = b != 0;
    return Op == LogicalOp::And ? (x && y) : Op == LogicalOp::Or ? (x || y) : !x;
  }
};

// Calls run(functor) with the functor of `op`.
template <typename Run>
void logical(LogicalOp op, Run&& run) {
  switch (op) {
    case LogicalOp::And:
      return run(Logical<LogicalOp::And>{});
    case LogicalOp::Or:
      return run(Logical<LogicalOp::Or>{});
    case LogicalOp::Not:
      return run(Logical<LogicalOp::Not>{});
  }
}

// The where and logical kernels of a device whose element-wise driver is `Map`.
template <typename Map>
void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  QGRAD_DISPATCH_ALL(out.dtype(), "where", [&] {
    Map::template run<scalar_t, std::uint8_t, scalar_t, scalar_t>("where", Select<scalar_t>{}, out,
                                                                  cond, a, b);
  });
}

template <typename Map>
void logical_kernel(LogicalOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  using U8 = std::uint8_t;
  logical(op, [&](auto f) { Map::template run<U8, U8, U8>("logical", f, out, a, b); });
}

}  // namespace qgrad::where_elem
