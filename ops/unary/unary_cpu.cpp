// CPU unary kernels: one templated loop per op over the StridedLoop (forward: out, x; backward:
// out, g, saved), so every op body is inlined and the contiguous case vectorises. float32
// transcendentals use the branch-free approximations of vec_math.h (libm calls would keep the
// loops scalar); float64 uses libm. Integer ops wrap like PyTorch (no signed-overflow UB).
#include "ops/unary/unary_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/strided_loop.h"
#include "ops/unary/vec_math.h"

namespace qgrad {

namespace {

// The contiguous loops are separate, never-inlined functions: inlined into StridedLoop's two call
// sites, a large op body can exceed GCC's inlining budget in one of them and leave a call in
// the loop, which then stays scalar.
template <typename T, typename F>
QGRAD_NOINLINE void contiguous1(F f, T* o, const T* a, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) o[i] = f(a[i]);
}
template <typename T, typename F>
QGRAD_NOINLINE void contiguous2(F f, T* o, const T* a, const T* b, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
}
template <typename T, typename F>
QGRAD_NOINLINE void broadcast_first2(F f, T* o, T a, const T* b, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) o[i] = f(a, b[i]);
}

template <typename T, typename F>
void map1(const Tensor& x, const Tensor& out, F f) {
  const T* px = static_cast<const T*>(x.raw_data());
  T* po = static_cast<T*>(out.raw_data());
  StridedLoop<2> loop(out.shape(), {out.strides(), x.strides()}, {0, 0});
  loop.run([&](const std::array<std::int64_t, 2>& off, std::int64_t n,
               const std::array<std::int64_t, 2>& st) {
    T* o = po + off[0];
    const T* a = px + off[1];
    if (st[0] == 1 && st[1] == 1) {
      contiguous1(f, o, a, n);
    } else if (st[0] == 1 && st[1] == 0) {
      std::fill(o, o + n, f(*a));
    } else {
      for (std::int64_t i = 0; i < n; ++i) o[i * st[0]] = f(a[i * st[1]]);
    }
  });
}

template <typename T, typename F>
void map2(const Tensor& g, const Tensor& s, const Tensor& out, F f) {
  const T* pg = static_cast<const T*>(g.raw_data());
  const T* ps = static_cast<const T*>(s.raw_data());
  T* po = static_cast<T*>(out.raw_data());
  StridedLoop<3> loop(out.shape(), {out.strides(), g.strides(), s.strides()}, {0, 0, 0});
  loop.run([&](const std::array<std::int64_t, 3>& off, std::int64_t n,
               const std::array<std::int64_t, 3>& st) {
    T* o = po + off[0];
    const T* a = pg + off[1];
    const T* b = ps + off[2];
    if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
      contiguous2(f, o, a, b, n);
    } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
      broadcast_first2(f, o, *a, b, n);  // broadcast upstream gradient (e.g. a sum's backward)
    } else {
      for (std::int64_t i = 0; i < n; ++i) o[i * st[0]] = f(a[i * st[1]], b[i * st[2]]);
    }
  });
}

template <typename T>
constexpr T kSqrt1_2 = static_cast<T>(0.70710678118654752440);
template <typename T>
constexpr T kSqrt2OverPi = static_cast<T>(0.79788456080286535588);
template <typename T>
constexpr T kInvSqrt2Pi = static_cast<T>(0.39894228040143267794);
template <typename T>
constexpr T kGeluTanhCoeff = static_cast<T>(0.044715);

// The transcendentals each op needs, per type: vectorisable approximations for float32.
inline float exp_of(float v) {
  return vec_math::exp(v);
}
inline double exp_of(double v) {
  return std::exp(v);
}
inline float log_of(float v) {
  return vec_math::log(v);
}
inline double log_of(double v) {
  return std::log(v);
}
inline float tanh_of(float v) {
  return vec_math::tanh(v);
}
inline double tanh_of(double v) {
  return std::tanh(v);
}
// Standard normal CDF; erfc of a non-positive argument keeps the lower tail accurate.
inline float normal_cdf(float v) {
  return vec_math::normal_cdf(v);
}
inline double normal_cdf(double v) {
  return 0.5 * std::erfc(-v * kSqrt1_2<double>);
}

// 0.5 (1 + tanh(u)) with u = sqrt(2/pi) (v + 0.044715 v^3), computed as sigmoid(2u).
template <typename T>
T gelu_tanh_gate(T v) {
  const T u = kSqrt2OverPi<T> * (v + kGeluTanhCoeff<T> * v * v * v);
  return T(1) / (T(1) + exp_of(T(-2) * u));
}

template <typename T>
void forward(UnaryOp op, const Tensor& x, const Tensor& out, T p0, T p1) {
  switch (op) {
    case UnaryOp::Neg:
      return map1<T>(x, out, [](T v) { return -v; });
    case UnaryOp::Abs:
      return map1<T>(x, out, [](T v) { return std::fabs(v); });
    case UnaryOp::Sign:
      // sign(NaN) = 0, as torch.sign.
      return map1<T>(x, out, [](T v) { return static_cast<T>((v > 0) - (v < 0)); });
    case UnaryOp::Exp:
      return map1<T>(x, out, [](T v) { return exp_of(v); });
    case UnaryOp::Log:
      return map1<T>(x, out, [](T v) { return log_of(v); });
    case UnaryOp::Sqrt:
      return map1<T>(x, out, [](T v) { return std::sqrt(v); });
    case UnaryOp::Relu:
      // NaN stays NaN (v > 0 is false for NaN, so test v <= 0 instead).
      return map1<T>(x, out, [](T v) { return v <= 0 ? T(0) : v; });
    case UnaryOp::LeakyRelu:
      return map1<T>(x, out, [p0](T v) {
        const T scaled = v * p0;
        return v > 0 ? v : scaled;
      });
    case UnaryOp::Hardtanh:
    case UnaryOp::Clamp:
      // min(max(v, lo), hi) as torch.clamp: NaN propagates, lo > hi gives hi everywhere.
      return map1<T>(x, out, [p0, p1](T v) {
        const T t = v < p0 ? p0 : v;
        return t > p1 ? p1 : t;
      });
    case UnaryOp::Sigmoid:
      return map1<T>(x, out, [](T v) { return T(1) / (T(1) + exp_of(-v)); });
    case UnaryOp::Tanh:
      return map1<T>(x, out, [](T v) { return tanh_of(v); });
    case UnaryOp::Gelu:
      return map1<T>(x, out, [](T v) { return v * normal_cdf(v); });
    case UnaryOp::GeluTanh:
      // 0.5 (1 + tanh(u)) = sigmoid(2u): the same function without the cancellation of 1 + tanh
      // for negative u.
      return map1<T>(x, out, [](T v) { return v * gelu_tanh_gate(v); });
  }
}

// Backward rules follow PyTorch's derivatives (including where a NaN input sends its gradient).
template <typename T>
void backward(UnaryOp op, const Tensor& g, const Tensor& x, const Tensor& y, const Tensor& out,
              T p0, T p1) {
  switch (op) {
    case UnaryOp::Neg:
      return map1<T>(g, out, [](T d) { return -d; });
    case UnaryOp::Abs:
      return map2<T>(g, x, out, [](T d, T v) { return d * static_cast<T>((v > 0) - (v < 0)); });
    case UnaryOp::Sign:
      return map1<T>(g, out, [](T) { return T(0); });
    case UnaryOp::Exp:
      return map2<T>(g, y, out, [](T d, T r) { return d * r; });
    case UnaryOp::Log:
      return map2<T>(g, x, out, [](T d, T v) { return d / v; });
    case UnaryOp::Sqrt:
      return map2<T>(g, y, out, [](T d, T r) { return d / (T(2) * r); });
    case UnaryOp::Relu:
      // threshold_backward: zero where the output is <= 0 (a NaN output passes the gradient).
      return map2<T>(g, y, out, [](T d, T r) { return r <= 0 ? T(0) : d; });
    case UnaryOp::LeakyRelu:
      return map2<T>(g, x, out, [p0](T d, T v) {
        const T scaled = d * p0;
        return v > 0 ? d : scaled;
      });
    case UnaryOp::Hardtanh:
      // Gradient strictly inside the bounds; none for NaN inputs, as PyTorch's vectorised kernel
      // (its scalar path, used only for tiny tensors, lets NaN through).
      return map2<T>(g, x, out, [p0, p1](T d, T v) { return (v > p0 && v < p1) ? d : T(0); });
    case UnaryOp::Clamp:
      // Gradient inside the closed interval; NaN inputs get none, as torch.clamp.
      return map2<T>(g, x, out, [p0, p1](T d, T v) { return (v >= p0 && v <= p1) ? d : T(0); });
    case UnaryOp::Sigmoid:
      return map2<T>(g, y, out, [](T d, T r) { return d * (T(1) - r) * r; });
    case UnaryOp::Tanh:
      return map2<T>(g, y, out, [](T d, T r) { return d * (T(1) - r * r); });
    case UnaryOp::Gelu:
      return map2<T>(g, x, out, [](T d, T v) {
        const T pdf = kInvSqrt2Pi<T> * exp_of(T(-0.5) * v * v);
        return d * (normal_cdf(v) + v * pdf);
      });
    case UnaryOp::GeluTanh:
      // With s = 0.5 (1 + tanh(u)): d/dv [v s] = s + v * 2 s (1 - s) * du/dv.
      return map2<T>(g, x, out, [](T d, T v) {
        const T s = gelu_tanh_gate(v);
        const T du = kSqrt2OverPi<T> * (T(1) + T(3) * kGeluTanhCoeff<T> * v * v);
        return d * (s + T(2) * v * s * (T(1) - s) * du);
      });
  }
}

// Two's complement negation without signed-overflow UB (-INT_MIN wraps to INT_MIN, as torch).
template <typename T>
T wrap_neg(T v) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(U(0) - static_cast<U>(v)));
}

template <typename T>
void forward_int(UnaryOp op, const Tensor& x, const Tensor& out, double p0, double p1) {
  switch (op) {
    case UnaryOp::Neg:
      return map1<T>(x, out, [](T v) { return wrap_neg(v); });
    case UnaryOp::Abs:
      return map1<T>(x, out, [](T v) { return v < 0 ? wrap_neg(v) : v; });
    case UnaryOp::Sign:
      return map1<T>(x, out, [](T v) { return static_cast<T>((v > 0) - (v < 0)); });
    case UnaryOp::Relu:
      return map1<T>(x, out, [](T v) { return v < 0 ? T(0) : v; });
    case UnaryOp::Clamp: {
      // Integral bounds (the caller converts to float for fractional ones); bounds outside T's
      // range, or infinite (an absent bound), clip to T's range.
      const double tlo = static_cast<double>(std::numeric_limits<T>::lowest());
      const double thi = static_cast<double>(std::numeric_limits<T>::max());
      const T lo = static_cast<T>(std::clamp(p0, tlo, thi));
      const T hi = static_cast<T>(std::clamp(p1, tlo, thi));
      return map1<T>(x, out, [lo, hi](T v) {
        const T t = v < lo ? lo : v;
        return t > hi ? hi : t;
      });
    }
    default:
      throw DTypeError(std::string(unary_op_name(op)) + ": expected a floating tensor, got " +
                       dtype_name(x.dtype()));
  }
}

void unary_cpu(UnaryOp op, const Tensor& x, const Tensor& out, double p0, double p1) {
  if (!is_floating(x.dtype())) {
    QGRAD_DISPATCH_ALL(x.dtype(), unary_op_name(op), [&] {
      if constexpr (std::is_integral_v<scalar_t>) {
        forward_int<scalar_t>(op, x, out, p0, p1);
      }
    });
    return;
  }
  QGRAD_DISPATCH_FLOAT(x.dtype(), unary_op_name(op), [&] {
    forward<scalar_t>(op, x, out, static_cast<scalar_t>(p0), static_cast<scalar_t>(p1));
  });
}

void unary_backward_cpu(UnaryOp op, const Tensor& g, const Tensor& x, const Tensor& y,
                        const Tensor& out, double p0, double p1) {
  QGRAD_DISPATCH_FLOAT(g.dtype(), unary_op_name(op), [&] {
    backward<scalar_t>(op, g, x, y, out, static_cast<scalar_t>(p0), static_cast<scalar_t>(p1));
  });
}

}  // namespace

void register_unary_cpu_kernels(KernelRegistry& r) {
  r.table<UnaryKernel>("unary").define(DeviceType::CPU, &unary_cpu, kAllDTypes);
  r.table<UnaryBackwardKernel>("unary_backward")
      .define(DeviceType::CPU, &unary_backward_cpu, kFloatingDTypes);
}

}  // namespace qgrad
