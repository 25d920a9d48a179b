// CPU binary kernels on the StridedLoop. The contiguous inner case (strides 1/0) is a plain loop
// the compiler vectorises; the op is a template parameter so each loop body is branch-free.
#include "ops/binary/binary_cpu.h"

#include <cmath>
#include <type_traits>

#include "core/strided_loop.h"

namespace qgrad {

namespace {

template <typename T>
struct OpAdd {
  T operator()(T a, T b) const { return static_cast<T>(a + b); }
};
template <typename T>
struct OpSub {
  T operator()(T a, T b) const { return static_cast<T>(a - b); }
};
template <typename T>
struct OpMul {
  T operator()(T a, T b) const { return static_cast<T>(a * b); }
};
template <typename T>
struct OpDiv {
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      // Integer division by zero is undefined behaviour; callers check first.
      return static_cast<T>(a / b);
    } else {
      return a / b;
    }
  }
};
template <typename T>
struct OpPow {
  T operator()(T a, T b) const {
    return static_cast<T>(std::pow(static_cast<double>(a), static_cast<double>(b)));
  }
};
template <typename T>
struct OpMax {
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a) || std::isnan(b)) return a + b;  // NaN propagates, as in PyTorch
    }
    return a > b ? a : b;
  }
};
template <typename T>
struct OpMin {
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a) || std::isnan(b)) return a + b;
    }
    return a < b ? a : b;
  }
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
      for (std::int64_t i = 0; i < n; ++i) o[i] = op(x[i], y[i]);
    } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
      const T yv = *y;
      for (std::int64_t i = 0; i < n; ++i) o[i] = op(x[i], yv);
    } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
      const T xv = *x;
      for (std::int64_t i = 0; i < n; ++i) o[i] = op(xv, y[i]);
    } else {
      for (std::int64_t i = 0; i < n; ++i) o[i * st[0]] = op(x[i * st[1]], y[i * st[2]]);
    }
  });
}

}  // namespace

void binary_cpu(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  QGRAD_DISPATCH_ALL(a.dtype(), binary_op_name(op), [&] {
    using T = scalar_t;
    using U8 = std::uint8_t;
    switch (op) {
      case BinaryOp::Add:
        return run<T, T>(a, b, out, OpAdd<T>{});
      case BinaryOp::Sub:
        return run<T, T>(a, b, out, OpSub<T>{});
      case BinaryOp::Mul:
        return run<T, T>(a, b, out, OpMul<T>{});
      case BinaryOp::Div:
        return run<T, T>(a, b, out, OpDiv<T>{});
      case BinaryOp::Pow:
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
  });
}

}  // namespace qgrad
