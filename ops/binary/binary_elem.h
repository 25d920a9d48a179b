// The element-wise math of the binary ops, written once for both devices: a QGRAD_HD functor per
// op (arithmetic wrapping like PyTorch for integers, computed in the unsigned type so there is no
// signed-overflow UB; maximum/minimum propagating NaN from either side; comparisons giving uint8),
// the functors of pow's common scalar exponents, and the switch that picks the functor for a
// BinaryOp and hands it to a device's map (cpu::map in binary_cpu.cpp, cuda::map in
// binary_cuda.cu).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/error.h"
#include "core/host_device.h"
#include "ops/binary/binary.h"

namespace qgrad::binary_elem {

// The unsigned type integer arithmetic is done in (wraps modulo 2^bits); T itself for floats.
template <typename T, bool = std::is_integral_v<T>>
struct Wrap {
  using type = T;
};
template <typename T>
struct Wrap<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <typename T>
using wrap_t = typename Wrap<T>::type;

template <typename T>
struct Add {
  QGRAD_HD T operator()(T a, T b) const {
    return static_cast<T>(
        static_cast<wrap_t<T>>(static_cast<wrap_t<T>>(a) + static_cast<wrap_t<T>>(b)));
  }
};
template <typename T>
struct Sub {
  QGRAD_HD T operator()(T a, T b) const {
    return static_cast<T>(
        static_cast<wrap_t<T>>(static_cast<wrap_t<T>>(a) - static_cast<wrap_t<T>>(b)));
  }
};
template <typename T>
struct Mul {
  QGRAD_HD T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      // Promote narrow unsigned types past int, whose multiplication could overflow.
      using W = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, wrap_t<T>>;
      return static_cast<T>(static_cast<wrap_t<T>>(static_cast<W>(static_cast<wrap_t<T>>(a)) *
                                                   static_cast<W>(static_cast<wrap_t<T>>(b))));
    } else {
      return a * b;
    }
  }
};
template <typename T>
struct Div {
  static_assert(std::is_floating_point_v<T>, "integer division is done in float");
  QGRAD_HD T operator()(T a, T b) const { return a / b; }
};
template <typename T>
struct Pow {
  QGRAD_HD T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::pow(a, b);
    } else {
      // Exponentiation by squaring, wrapping like PyTorch's integer pow. Negative exponents give
      // the integer part of 1 / a^|b| (1 for a == 1, +-1 for a == -1, else 0), as torch.
      if constexpr (std::is_signed_v<T>) {
        if (b < 0) {
          if (a == 1) return 1;
          if (a == -1) return static_cast<T>((b % 2 == 0) ? 1 : -1);
          return 0;
        }
      }
      using W = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, wrap_t<T>>;
      W base = static_cast<W>(static_cast<wrap_t<T>>(a)), result = 1;
      auto e = static_cast<std::make_unsigned_t<T>>(b);
      while (e) {
        if (e & 1u) result = static_cast<W>(result * base);
        base = static_cast<W>(base * base);
        e = static_cast<decltype(e)>(e >> 1);
      }
      return static_cast<T>(static_cast<wrap_t<T>>(result));
    }
  }
};
// maximum/minimum propagate NaN from either side.
template <typename T>
struct Max {
  QGRAD_HD T operator()(T a, T b) const { return (a > b || hd::isnan(a)) ? a : b; }
};
template <typename T>
struct Min {
  QGRAD_HD T operator()(T a, T b) const { return (a < b || hd::isnan(a)) ? a : b; }
};
template <typename T>
struct Eq {
  QGRAD_HD std::uint8_t operator()(T a, T b) const { return a == b; }
};
template <typename T>
struct Ne {
  QGRAD_HD std::uint8_t operator()(T a, T b) const { return a != b; }
};
template <typename T>
struct Lt {
  QGRAD_HD std::uint8_t operator()(T a, T b) const { return a < b; }
};
template <typename T>
struct Le {
  QGRAD_HD std::uint8_t operator()(T a, T b) const { return a <= b; }
};
template <typename T>
struct Gt {
  QGRAD_HD std::uint8_t operator()(T a, T b) const { return a > b; }
};
template <typename T>
struct Ge {
  QGRAD_HD std::uint8_t operator()(T a, T b) const { return a >= b; }
};

// pow with an exponent known on the host: plain arithmetic for the common ones (vectorises;
// pow calls do not), as PyTorch does for the same exponents.
template <typename T>
struct PowSquare {
  QGRAD_HD T operator()(T x, T) const { return x * x; }
};
template <typename T>
struct PowCube {
  QGRAD_HD T operator()(T x, T) const { return x * x * x; }
};
template <typename T>
struct PowSqrt {
  QGRAD_HD T operator()(T x, T) const { return std::sqrt(x); }
};
template <typename T>
struct PowIdentity {
  QGRAD_HD T operator()(T x, T) const { return x; }
};
template <typename T>
struct PowReciprocal {
  QGRAD_HD T operator()(T x, T) const { return T(1) / x; }
};
template <typename T>
struct PowReciprocalSquare {
  QGRAD_HD T operator()(T x, T) const { return T(1) / (x * x); }
};

// Calls run(functor) with the functor for a pow whose exponent `e` is the same everywhere and
// known on the host; false when `e` has no special form.
template <typename T, typename Run>
bool pow_scalar_exponent(T e, Run&& run) {
  if (e == T(1)) return run(PowIdentity<T>{}), true;
  if (e == T(2)) return run(PowSquare<T>{}), true;
  if (e == T(0.5)) return run(PowSqrt<T>{}), true;
  if (e == T(3)) return run(PowCube<T>{}), true;
  if (e == T(-1)) return run(PowReciprocal<T>{}), true;
  if (e == T(-2)) return run(PowReciprocalSquare<T>{}), true;
  return false;
}

// Calls run(functor) with the functor of `op` for operands of type T (the functor's result type
// is T, or uint8 for comparisons). Integer division never reaches a kernel: div is true division
// in float.
template <typename T, typename Run>
void dispatch(BinaryOp op, Run&& run) {
  switch (op) {
    case BinaryOp::Add:
      return run(Add<T>{});
    case BinaryOp::Sub:
      return run(Sub<T>{});
    case BinaryOp::Mul:
      return run(Mul<T>{});
    case BinaryOp::Div:
      if constexpr (std::is_floating_point_v<T>) {
        return run(Div<T>{});
      } else {
        throw DTypeError(std::string("div: internal error: integer operands reached the kernel (") +
                         dtype_name(dtype_v<T>) + "); div converts them to float first");
      }
    case BinaryOp::Pow:
      return run(Pow<T>{});
    case BinaryOp::Maximum:
      return run(Max<T>{});
    case BinaryOp::Minimum:
      return run(Min<T>{});
    case BinaryOp::Eq:
      return run(Eq<T>{});
    case BinaryOp::Ne:
      return run(Ne<T>{});
    case BinaryOp::Lt:
      return run(Lt<T>{});
    case BinaryOp::Le:
      return run(Le<T>{});
    case BinaryOp::Gt:
      return run(Gt<T>{});
    case BinaryOp::Ge:
      return run(Ge<T>{});
  }
}

// The binary kernel of a device whose element-wise driver is `Map` (cpu::Map, cuda::Map). On a
// device whose memory the host reads (Map::kHostMemory), a pow whose exponent is one scalar
// reads it and takes the arithmetic forms above.
template <typename Map>
void kernel(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  const char* name = binary_op_name(op);
  QGRAD_DISPATCH_ALL(a.dtype(), name, [&] {
    using T = scalar_t;
    auto run = [&](auto f) {
      using R = std::invoke_result_t<decltype(f), T, T>;
      Map::template run<R, T, T>(name, f, out, a, b);
    };
    if constexpr (std::is_floating_point_v<T> && Map::kHostMemory) {
      bool scalar_exponent = true;
      for (std::int64_t st : b.strides()) scalar_exponent = scalar_exponent && st == 0;
      if (op == BinaryOp::Pow && scalar_exponent &&
          pow_scalar_exponent(*static_cast<const T*>(b.raw_data()), run))
        return;
    }
    dispatch<T>(op, run);
  });
}

// a + b, the "add" kernel gradient accumulation uses.
template <typename Map>
void add(const Tensor& a, const Tensor& b, const Tensor& out) {
  kernel<Map>(BinaryOp::Add, a, b, out);
}

}  // namespace qgrad::binary_elem
