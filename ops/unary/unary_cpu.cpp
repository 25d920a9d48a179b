// CPU unary kernels: one templated loop per op over the StridedLoop (forward: out, x; backward:
// out, g, saved), so every op body is inlined and the contiguous case vectorises.
#include "ops/unary/unary_cpu.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/strided_loop.h"

namespace qgrad {

namespace {

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
      for (std::int64_t i = 0; i < n; ++i) o[i] = f(a[i]);
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
      for (std::int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
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
void forward(UnaryOp op, const Tensor& x, const Tensor& out, T p0, T p1) {
  switch (op) {
    case UnaryOp::Neg:
      return map1<T>(x, out, [](T v) { return static_cast<T>(-v); });
    case UnaryOp::Abs:
      return map1<T>(x, out, [](T v) { return static_cast<T>(v < 0 ? -v : v); });
    case UnaryOp::Sign:
      return map1<T>(x, out, [](T v) { return static_cast<T>((v > 0) - (v < 0)); });
    case UnaryOp::Exp:
      return map1<T>(x, out, [](T v) { return std::exp(v); });
    case UnaryOp::Log:
      return map1<T>(x, out, [](T v) { return std::log(v); });
    case UnaryOp::Sqrt:
      return map1<T>(x, out, [](T v) { return std::sqrt(v); });
    case UnaryOp::Relu:
      // NaN stays NaN (v > 0 is false for NaN, so test v <= 0 instead).
      return map1<T>(x, out, [](T v) { return v <= 0 ? T(0) : v; });
    case UnaryOp::LeakyRelu:
      return map1<T>(x, out, [p0](T v) { return v > 0 ? v : static_cast<T>(v * p0); });
    case UnaryOp::Hardtanh:
    case UnaryOp::Clamp:
      // min(max(v, lo), hi) as torch.clamp: NaN propagates, lo > hi gives hi everywhere.
      return map1<T>(x, out, [p0, p1](T v) {
        T t = v < p0 ? p0 : v;
        return t > p1 ? p1 : t;
      });
    case UnaryOp::Sigmoid:
      return map1<T>(x, out, [](T v) { return T(1) / (T(1) + std::exp(-v)); });
    case UnaryOp::Tanh:
      return map1<T>(x, out, [](T v) { return std::tanh(v); });
    case UnaryOp::Gelu:
      return map1<T>(x, out, [](T v) { return v * T(0.5) * (T(1) + std::erf(v * kSqrt1_2<T>)); });
    case UnaryOp::GeluTanh:
      return map1<T>(x, out, [](T v) {
        T inner = kSqrt2OverPi<T> * (v + T(0.044715) * v * v * v);
        return T(0.5) * v * (T(1) + std::tanh(inner));
      });
  }
}

template <typename T>
void backward(UnaryOp op, const Tensor& g, const Tensor& x, const Tensor& y, const Tensor& out,
              T p0, T p1) {
  switch (op) {
    case UnaryOp::Neg:
      return map1<T>(g, out, [](T d) { return static_cast<T>(-d); });
    case UnaryOp::Abs:
      return map2<T>(g, x, out, [](T d, T v) {
        return static_cast<T>(d * static_cast<T>((v > 0) - (v < 0)));
      });
    case UnaryOp::Sign:
      return map1<T>(g, out, [](T) { return T(0); });
    case UnaryOp::Exp:
      return map2<T>(g, y, out, [](T d, T r) { return d * r; });
    case UnaryOp::Log:
      return map2<T>(g, x, out, [](T d, T v) { return d / v; });
    case UnaryOp::Sqrt:
      return map2<T>(g, y, out, [](T d, T r) { return d / (T(2) * r); });
    case UnaryOp::Relu:
      return map2<T>(g, y, out, [](T d, T r) { return r > 0 ? d : T(0); });
    case UnaryOp::LeakyRelu:
      return map2<T>(g, x, out, [p0](T d, T v) { return v > 0 ? d : static_cast<T>(d * p0); });
    case UnaryOp::Hardtanh:
      return map2<T>(g, x, out, [p0, p1](T d, T v) { return (v > p0 && v < p1) ? d : T(0); });
    case UnaryOp::Clamp:
      return map2<T>(g, x, out, [p0, p1](T d, T v) { return (v >= p0 && v <= p1) ? d : T(0); });
    case UnaryOp::Sigmoid:
      return map2<T>(g, y, out, [](T d, T r) { return d * (T(1) - r) * r; });
    case UnaryOp::Tanh:
      return map2<T>(g, y, out, [](T d, T r) { return d * (T(1) - r * r); });
    case UnaryOp::Gelu:
      return map2<T>(g, x, out, [](T d, T v) {
        T cdf = T(0.5) * (T(1) + std::erf(v * kSqrt1_2<T>));
        T pdf = kInvSqrt2Pi<T> * std::exp(T(-0.5) * v * v);
        return d * (cdf + v * pdf);
      });
    case UnaryOp::GeluTanh:
      return map2<T>(g, x, out, [](T d, T v) {
        const T k = kSqrt2OverPi<T>, c = T(0.044715);
        T inner = k * (v + c * v * v * v);
        T t = std::tanh(inner);
        T left = T(0.5) * v, right = T(1) + t;
        T dinner = k * (T(1) + T(3) * c * v * v);
        return d * (T(0.5) * right + left * (T(1) - t * t) * dinner);
      });
  }
}

}  // namespace

void unary_cpu(UnaryOp op, const Tensor& x, const Tensor& out, double p0, double p1) {
  if (!is_floating(x.dtype())) {
    // Integer tensors support the exact ops only.
    QGRAD_DISPATCH_ALL(x.dtype(), unary_op_name(op), [&] {
      using T = scalar_t;
      // Bounds outside T's range (or infinite: an absent clamp bound) clip to T's range.
      const double tlo = static_cast<double>(std::numeric_limits<T>::lowest());
      const double thi = static_cast<double>(std::numeric_limits<T>::max());
      const T lo = static_cast<T>(std::clamp(std::ceil(p0), tlo, thi));
      const T hi = static_cast<T>(std::clamp(std::floor(p1), tlo, thi));
      switch (op) {
        case UnaryOp::Neg:
          return map1<T>(x, out, [](T v) { return static_cast<T>(-v); });
        case UnaryOp::Abs:
          return map1<T>(x, out, [](T v) { return static_cast<T>(v < 0 ? -v : v); });
        case UnaryOp::Sign:
          return map1<T>(x, out, [](T v) { return static_cast<T>((v > 0) - (v < 0)); });
        case UnaryOp::Relu:
          return map1<T>(x, out, [](T v) { return v < 0 ? T(0) : v; });
        case UnaryOp::Clamp:
          return map1<T>(x, out, [lo, hi](T v) {
            T t = v < lo ? lo : v;
            return t > hi ? hi : t;
          });
        default:
          throw DTypeError(std::string(unary_op_name(op)) + ": expected a floating tensor, got " +
                           dtype_name(x.dtype()));
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

}  // namespace qgrad
