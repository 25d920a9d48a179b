// CPU binary kernels on the StridedLoop. The contiguous inner cases (strides 1/0) are plain loops
// the compiler vectorises; the op is a template parameter so each loop body is branch-free.
// Integer arithmetic wraps like PyTorch (computed in the unsigned type: no signed-overflow UB);
// integer division never reaches a kernel (div is true division in float).
#include "ops/binary/binary_kernels.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/core_kernels.h"
#include "core/strided_loop.h"
#include "ops/unary/vec_math.h"  // QGRAD_NOINLINE

namespace qgrad {

namespace {

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
struct OpAdd {
  T operator()(T a, T b) const {
    return static_cast<T>(
        static_cast<wrap_t<T>>(static_cast<wrap_t<T>>(a) + static_cast<wrap_t<T>>(b)));
  }
};
template <typename T>
struct OpSub {
  T operator()(T a, T b) const {
    return static_cast<T>(
        static_cast<wrap_t<T>>(static_cast<wrap_t<T>>(a) - static_cast<wrap_t<T>>(b)));
  }
};
template <typename T>
struct OpMul {
  T operator()(T a, T b) const {
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
struct OpDiv {
  static_assert(std::is_floating_point_v<T>, "integer division is done in float");
  T operator()(T a, T b) const { return a / b; }
};
template <typename T>
struct OpPow {
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::pow(a, b);
    } else {
      // Exponentiation by squaring, wrapping like PyTorch's integer pow. Negative exponents give
      // the integer part of 1 / a^|b| (1 for a == 1, +-1 for a == -1, else 0), as torch.
      if (b < 0) {
        if (a == 1) return 1;
        if constexpr (std::is_signed_v<T>) {
          if (a == -1) return static_cast<T>((b % 2 == 0) ? 1 : -1);
        }
        return 0;
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
// NaN test that compiles to a compare (std::isnan is a call that can keep loops scalar).
template <typename T>
bool nan_test(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return !(v == v);
  } else {
    (void)v;
    return false;
  }
}
// maximum/minimum propagate NaN from either side.
template <typename T>
struct OpMax {
  T operator()(T a, T b) const { return (a > b || nan_test(a)) ? a : b; }
};
template <typename T>
struct OpMin {
  T operator()(T a, T b) const { return (a < b || nan_test(a)) ? a : b; }
};
template <typename T>
struct OpEq {
  std::uint8_t operator()(T a, T b) const { return a == b; }
};
template <typename T>
struct OpNe {
  std::uint8_t operator()(T a, T b) const { return a != b; }
};
template <typename T>
struct OpLt {
  std::uint8_t operator()(T a, T b) const { return a < b; }
};
template <typename T>
struct OpLe {
  std::uint8_t operator()(T a, T b) const { return a <= b; }
};
template <typename T>
struct OpGt {
  std::uint8_t operator()(T a, T b) const { return a > b; }
};
template <typename T>
struct OpGe {
  std::uint8_t operator()(T a, T b) const { return a >= b; }
};

// The vectorisable inner loops, kept out of line (see unary_cpu.cpp: inlined into StridedLoop's
// two call sites, a body can exceed GCC's inlining budget in one of them and stay scalar).
template <typename T, typename R, typename Op>
QGRAD_NOINLINE void both_contiguous(Op op, R* o, const T* x, const T* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) o[i] = op(x[i], y[i]);
}
template <typename T, typename R, typename Op>
QGRAD_NOINLINE void second_scalar(Op op, R* o, const T* x, T y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) o[i] = op(x[i], y);
}
template <typename T, typename R, typename Op>
QGRAD_NOINLINE void first_scalar(Op op, R* o, T x, const T* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) o[i] = op(x, y[i]);
}

template <typename T, typename R, typename Op>
void run(const Tensor& a, const Tensor& b, const Tensor& out, Op op) {
  const T* pa = static_cast<const T*>(a.raw_data());
  const T* pb = static_cast<const T*>(b.raw_data());
  R* po = static_cast<R*>(out.raw_data());
  StridedLoop<3> loop(out.shape(), {out.strides(), a.strides(), b.strides()}, {0, 0, 0});
  loop.run([&](const std::array<std::int64_t, 3>& off, std::int64_t n,
               const std::array<std::int64_t, 3>& st) {
    R* o = po + off[0];
    const T* x = pa + off[1];
    const T* y = pb + off[2];
    if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
      both_contiguous(op, o, x, y, n);
    } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
      second_scalar(op, o, x, *y, n);
    } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
      first_scalar(op, o, *x, y, n);
    } else {
      for (std::int64_t i = 0; i < n; ++i) o[i * st[0]] = op(x[i * st[1]], y[i * st[2]]);
    }
  });
}

template <typename T>
void run_typed(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  using U8 = std::uint8_t;
  switch (op) {
    case BinaryOp::Add:
      return run<T, T>(a, b, out, OpAdd<T>{});
    case BinaryOp::Sub:
      return run<T, T>(a, b, out, OpSub<T>{});
    case BinaryOp::Mul:
      return run<T, T>(a, b, out, OpMul<T>{});
    case BinaryOp::Div:
      if constexpr (std::is_floating_point_v<T>) {
        return run<T, T>(a, b, out, OpDiv<T>{});
      } else {
        throw DTypeError(std::string("div: internal error: integer operands reached the kernel (") +
                         dtype_name(a.dtype()) + "); div converts them to float first");
      }
    case BinaryOp::Pow:
      if constexpr (std::is_floating_point_v<T>) {
        // Common scalar exponents as plain arithmetic (vectorises; powf calls do not), as
        // PyTorch does for the same exponents.
        if (b.numel() > 0 && std::all_of(b.strides().begin(), b.strides().end(),
                                         [](std::int64_t st) { return st == 0; })) {
          const T e = *static_cast<const T*>(b.raw_data());
          if (e == T(1)) return run<T, T>(a, b, out, [](T x, T) { return x; });
          if (e == T(2)) return run<T, T>(a, b, out, [](T x, T) { return x * x; });
          if (e == T(0.5)) return run<T, T>(a, b, out, [](T x, T) { return std::sqrt(x); });
          if (e == T(3)) return run<T, T>(a, b, out, [](T x, T) { return x * x * x; });
          if (e == T(-1)) return run<T, T>(a, b, out, [](T x, T) { return T(1) / x; });
          if (e == T(-2)) return run<T, T>(a, b, out, [](T x, T) { return T(1) / (x * x); });
        }
      }
      return run<T, T>(a, b, out, OpPow<T>{});
    case BinaryOp::Maximum:
      return run<T, T>(a, b, out, OpMax<T>{});
    case BinaryOp::Minimum:
      return run<T, T>(a, b, out, OpMin<T>{});
    case BinaryOp::Eq:
      return run<T, U8>(a, b, out, OpEq<T>{});
    case BinaryOp::Ne:
      return run<T, U8>(a, b, out, OpNe<T>{});
    case BinaryOp::Lt:
      return run<T, U8>(a, b, out, OpLt<T>{});
    case BinaryOp::Le:
      return run<T, U8>(a, b, out, OpLe<T>{});
    case BinaryOp::Gt:
      return run<T, U8>(a, b, out, OpGt<T>{});
    case BinaryOp::Ge:
      return run<T, U8>(a, b, out, OpGe<T>{});
  }
}

void binary_cpu(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  QGRAD_DISPATCH_ALL(a.dtype(), binary_op_name(op), [&] { run_typed<scalar_t>(op, a, b, out); });
}

void add_cpu(const Tensor& a, const Tensor& b, const Tensor& out) {
  binary_cpu(BinaryOp::Add, a, b, out);
}

}  // namespace

void register_binary_cpu_kernels(KernelRegistry& r) {
  r.table<BinaryKernel>("binary").define(DeviceType::CPU, &binary_cpu, kAllDTypes);
  r.table<AddKernel>("add").define(DeviceType::CPU, &add_cpu, kAllDTypes);
}

}  // namespace qgrad
