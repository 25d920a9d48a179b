// The element-wise math of the unary ops and activations, written once for both devices: a
// QGRAD_HD functor per forward and backward rule, and the switches that pick the functor for a
// UnaryOp and hand it to a device's map (cpu::map in unary_cpu.cpp, cuda::map in
// unary_cuda.cu). float32 transcendentals use the branch-free approximations of core/vec_math.h
// (vectorisable on the CPU, the same bits on the GPU); float64 uses the math library. Backward
// rules follow PyTorch's derivatives, including where a NaN input sends its gradient; integer
// ops wrap like PyTorch (no signed-overflow UB).
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "core/error.h"
#include "core/host_device.h"
#include "core/vec_math.h"
#include "ops/unary/unary.h"

namespace qgrad::unary_elem {

template <typename T>
inline constexpr T kSqrt1_2 = static_cast<T>(0.70710678118654752440);
template <typename T>
inline constexpr T kSqrt2OverPi = static_cast<T>(0.79788456080286535588);
template <typename T>
inline constexpr T kInvSqrt2Pi = static_cast<T>(0.39894228040143267794);
template <typename T>
inline constexpr T kGeluTanhCoeff = static_cast<T>(0.044715);

// The transcendentals each op needs, per type.
QGRAD_HD_INLINE float exp_of(float v) {
  return vec_math::exp(v);
}
QGRAD_HD_INLINE double exp_of(double v) {
  return std::exp(v);
}
QGRAD_HD_INLINE float log_of(float v) {
  return vec_math::log(v);
}
QGRAD_HD_INLINE double log_of(double v) {
  return std::log(v);
}
QGRAD_HD_INLINE float tanh_of(float v) {
  return vec_math::tanh(v);
}
QGRAD_HD_INLINE double tanh_of(double v) {
  return std::tanh(v);
}
// Standard normal CDF; erfc of a non-positive argument keeps the lower tail accurate.
QGRAD_HD_INLINE float normal_cdf(float v) {
  return vec_math::normal_cdf(v);
}
QGRAD_HD_INLINE double normal_cdf(double v) {
  return 0.5 * std::erfc(-v * kSqrt1_2<double>);
}

// 0.5 (1 + tanh(u)) with u = sqrt(2/pi) (v + 0.044715 v^3), computed as sigmoid(2u): the same
// function without the cancellation of 1 + tanh for negative u.
template <typename T>
QGRAD_HD_INLINE T gelu_tanh_gate(T v) {
  const T u = kSqrt2OverPi<T> * (v + kGeluTanhCoeff<T> * v * v * v);
  return T(1) / (T(1) + exp_of(T(-2) * u));
}

// Two's complement negation without signed-overflow UB (-INT_MIN wraps to INT_MIN, as torch).
template <typename T>
QGRAD_HD_INLINE T wrap_neg(T v) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(U(0) - static_cast<U>(v)));
}

// ---- forward: y = f(x) ----
template <typename T>
struct Neg {
  QGRAD_HD T operator()(T v) const {
    if constexpr (std::is_integral_v<T>) {
      return wrap_neg(v);
    } else {
      return -v;
    }
  }
};
template <typename T>
struct Abs {
  QGRAD_HD T operator()(T v) const {
    if constexpr (std::is_unsigned_v<T>) {
      return v;
    } else if constexpr (std::is_integral_v<T>) {
      return v < 0 ? wrap_neg(v) : v;
    } else {
      return std::fabs(v);
    }
  }
};
// sign(NaN) = 0, as torch.sign.
template <typename T>
struct Sign {
  QGRAD_HD T operator()(T v) const {
    if constexpr (std::is_unsigned_v<T>) {
      return static_cast<T>(v > 0);
    } else {
      return static_cast<T>((v > 0) - (v < 0));
    }
  }
};
template <typename T>
struct Exp {
  QGRAD_HD T operator()(T v) const { return exp_of(v); }
};
template <typename T>
struct Log {
  QGRAD_HD T operator()(T v) const { return log_of(v); }
};
template <typename T>
struct Sqrt {
  QGRAD_HD T operator()(T v) const { return std::sqrt(v); }
};
// NaN stays NaN (v > 0 is false for NaN, so the test is v <= 0).
template <typename T>
struct Relu {
  QGRAD_HD T operator()(T v) const { return v <= 0 ? T(0) : v; }
};
template <typename T>
struct LeakyRelu {
  T slope;
  QGRAD_HD T operator()(T v) const {
    const T scaled = v * slope;
    return v > 0 ? v : scaled;
  }
};
// min(max(v, lo), hi) as torch.clamp: NaN propagates, lo > hi gives hi everywhere.
template <typename T>
struct Clamp {
  T lo, hi;
  QGRAD_HD T operator()(T v) const {
    const T t = v < lo ? lo : v;
    return t > hi ? hi : t;
  }
};
template <typename T>
struct Sigmoid {
  QGRAD_HD T operator()(T v) const { return T(1) / (T(1) + exp_of(-v)); }
};
template <typename T>
struct Tanh {
  QGRAD_HD T operator()(T v) const { return tanh_of(v); }
};
template <typename T>
struct Gelu {
  QGRAD_HD T operator()(T v) const { return v * normal_cdf(v); }
};
template <typename T>
struct GeluTanh {
  QGRAD_HD T operator()(T v) const { return v * gelu_tanh_gate(v); }
};

// ---- backward: dx = rule(g, saved), saved being x or y as each rule reads ----
template <typename T>
struct NegBackward {
  QGRAD_HD T operator()(T d) const { return -d; }
};
template <typename T>
struct ZeroBackward {
  QGRAD_HD T operator()(T) const { return T(0); }
};
template <typename T>
struct AbsBackward {  // saved x
  QGRAD_HD T operator()(T d, T v) const { return d * static_cast<T>((v > 0) - (v < 0)); }
};
template <typename T>
struct MulBackward {  // exp: saved y
  QGRAD_HD T operator()(T d, T r) const { return d * r; }
};
template <typename T>
struct DivBackward {  // log: saved x
  QGRAD_HD T operator()(T d, T v) const { return d / v; }
};
template <typename T>
struct SqrtBackward {  // saved y
  QGRAD_HD T operator()(T d, T r) const { return d / (T(2) * r); }
};
// threshold_backward: zero where the output is <= 0 (a NaN output passes the gradient).
template <typename T>
struct ReluBackward {  // saved y
  QGRAD_HD T operator()(T d, T r) const { return r <= 0 ? T(0) : d; }
};
template <typename T>
struct LeakyReluBackward {  // saved x
  T slope;
  QGRAD_HD T operator()(T d, T v) const {
    const T scaled = d * slope;
    return v > 0 ? d : scaled;
  }
};
// Gradient strictly inside the bounds; none for NaN inputs, as PyTorch's vectorised kernel (its
// scalar path, used only for tiny tensors, lets NaN through).
template <typename T>
struct HardtanhBackward {  // saved x
  T lo, hi;
  QGRAD_HD T operator()(T d, T v) const { return (v > lo && v < hi) ? d : T(0); }
};
// Gradient inside the closed interval; NaN inputs get none, as torch.clamp.
template <typename T>
struct ClampBackward {  // saved x
  T lo, hi;
  QGRAD_HD T operator()(T d, T v) const { return (v >= lo && v <= hi) ? d : T(0); }
};
template <typename T>
struct SigmoidBackward {  // saved y
  QGRAD_HD T operator()(T d, T r) const { return d * (T(1) - r) * r; }
};
template <typename T>
struct TanhBackward {  // saved y
  QGRAD_HD T operator()(T d, T r) const { return d * (T(1) - r * r); }
};
template <typename T>
struct GeluBackward {  // saved x
  QGRAD_HD T operator()(T d, T v) const {
    const T pdf = kInvSqrt2Pi<T> * exp_of(T(-0.5) * v * v);
    return d * (normal_cdf(v) + v * pdf);
  }
};
// With s = 0.5 (1 + tanh(u)): d/dv [v s] = s + v * 2 s (1 - s) * du/dv.
template <typename T>
struct GeluTanhBackward {  // saved x
  QGRAD_HD T operator()(T d, T v) const {
    const T s = gelu_tanh_gate(v);
    const T du = kSqrt2OverPi<T> * (T(1) + T(3) * kGeluTanhCoeff<T> * v * v);
    return d * (s + T(2) * v * s * (T(1) - s) * du);
  }
};

// Calls run(functor) with the forward functor of `op` for floating T.
template <typename T, typename Run>
void with_forward_float(UnaryOp op, T p0, T p1, Run&& run) {
  switch (op) {
    case UnaryOp::Neg:
      return run(Neg<T>{});
    case UnaryOp::Abs:
      return run(Abs<T>{});
    case UnaryOp::Sign:
      return run(Sign<T>{});
    case UnaryOp::Exp:
      return run(Exp<T>{});
    case UnaryOp::Log:
      return run(Log<T>{});
    case UnaryOp::Sqrt:
      return run(Sqrt<T>{});
    case UnaryOp::Relu:
      return run(Relu<T>{});
    case UnaryOp::LeakyRelu:
      return run(LeakyRelu<T>{p0});
    case UnaryOp::Hardtanh:
    case UnaryOp::Clamp:
      return run(Clamp<T>{p0, p1});
    case UnaryOp::Sigmoid:
      return run(Sigmoid<T>{});
    case UnaryOp::Tanh:
      return run(Tanh<T>{});
    case UnaryOp::Gelu:
      return run(Gelu<T>{});
    case UnaryOp::GeluTanh:
      return run(GeluTanh<T>{});
  }
}

// Calls run(functor) with the forward functor of `op` for integral T; the other ops are float
// only. Clamp's bounds are integral (the front converts to float for fractional ones); bounds
// outside T's range, or infinite (an absent bound), clip to T's range.
template <typename T, typename Run>
void with_forward_int(UnaryOp op, double p0, double p1, Run&& run) {
  switch (op) {
    case UnaryOp::Neg:
      return run(Neg<T>{});
    case UnaryOp::Abs:
      return run(Abs<T>{});
    case UnaryOp::Sign:
      return run(Sign<T>{});
    case UnaryOp::Relu:
      return run(Relu<T>{});
    case UnaryOp::Clamp: {
      const double tlo = static_cast<double>(std::numeric_limits<T>::lowest());
      const double thi = static_cast<double>(std::numeric_limits<T>::max());
      return run(Clamp<T>{static_cast<T>(p0 < tlo   ? tlo
                                         : p0 > thi ? thi
                                                    : p0),
                          static_cast<T>(p1 < tlo   ? tlo
                                         : p1 > thi ? thi
                                                    : p1)});
    }
    default:
      throw DTypeError(std::string(unary_op_name(op)) + ": expected a floating tensor, got " +
                       dtype_name(dtype_v<T>));
  }
}

// Which saved tensor a backward rule reads.
enum class Saved { None, Input, Output };

// Calls run(functor, saved) with the backward functor of `op` (a one-argument functor of g when
// saved is None, else a functor of (g, saved)).
template <typename T, typename Run>
void with_backward(UnaryOp op, T p0, T p1, Run&& run) {
  switch (op) {
    case UnaryOp::Neg:
      return run(NegBackward<T>{}, Saved::None);
    case UnaryOp::Abs:
      return run(AbsBackward<T>{}, Saved::Input);
    case UnaryOp::Sign:
      return run(ZeroBackward<T>{}, Saved::None);
    case UnaryOp::Exp:
      return run(MulBackward<T>{}, Saved::Output);
    case UnaryOp::Log:
      return run(DivBackward<T>{}, Saved::Input);
    case UnaryOp::Sqrt:
      return run(SqrtBackward<T>{}, Saved::Output);
    case UnaryOp::Relu:
      return run(ReluBackward<T>{}, Saved::Output);
    case UnaryOp::LeakyRelu:
      return run(LeakyReluBackward<T>{p0}, Saved::Input);
    case UnaryOp::Hardtanh:
      return run(HardtanhBackward<T>{p0, p1}, Saved::Input);
    case UnaryOp::Clamp:
      return run(ClampBackward<T>{p0, p1}, Saved::Input);
    case UnaryOp::Sigmoid:
      return run(SigmoidBackward<T>{}, Saved::Output);
    case UnaryOp::Tanh:
      return run(TanhBackward<T>{}, Saved::Output);
    case UnaryOp::Gelu:
      return run(GeluBackward<T>{}, Saved::Input);
    case UnaryOp::GeluTanh:
      return run(GeluTanhBackward<T>{}, Saved::Input);
  }
}

// The unary kernels of a device whose element-wise driver is `Map` (cpu::Map, cuda::Map).
template <typename Map>
void forward(UnaryOp op, const Tensor& x, const Tensor& out, double p0, double p1) {
  const char* name = unary_op_name(op);
  if (!is_floating(x.dtype())) {
    QGRAD_DISPATCH_ALL(x.dtype(), name, [&] {
      using T = scalar_t;
      if constexpr (std::is_integral_v<T>) {
        with_forward_int<T>(op, p0, p1, [&](auto f) { Map::template run<T, T>(name, f, out, x); });
      }
    });
    return;
  }
  QGRAD_DISPATCH_FLOAT(x.dtype(), name, [&] {
    using T = scalar_t;
    with_forward_float<T>(op, static_cast<T>(p0), static_cast<T>(p1),
                          [&](auto f) { Map::template run<T, T>(name, f, out, x); });
  });
}

template <typename Map>
void backward(UnaryOp op, const Tensor& g, const Tensor& x, const Tensor& y, const Tensor& out,
              double p0, double p1) {
  const char* name = unary_op_name(op);
  QGRAD_DISPATCH_FLOAT(g.dtype(), name, [&] {
    using T = scalar_t;
    with_backward<T>(op, static_cast<T>(p0), static_cast<T>(p1), [&](auto f, Saved saved) {
      if constexpr (std::is_invocable_v<decltype(f), T>) {
        Map::template run<T, T>(name, f, out, g);
      } else {
        Map::template run<T, T, T>(name, f, out, g, saved == Saved::Input ? x : y);
      }
    });
  });
}

}  // namespace qgrad::unary_elem
