// NumBits formatting and comparison, minifloat format constants and the scalar reference cast.
#include "quant/nvidia/num_bits.h"

#include <cmath>

#include "core/error.h"

namespace qgrad::nvidia {

std::string FloatFormat::str() const {
  return "E" + std::to_string(exponent_bits) + "M" + std::to_string(mantissa_bits);
}

std::string NumBits::str() const {
  if (!is_float_) return std::to_string(bits_);
  return "(" + std::to_string(format_.exponent_bits) + ", " +
         std::to_string(format_.mantissa_bits) + ")";
}

bool NumBits::operator==(const NumBits& o) const {
  if (is_float_ != o.is_float_) return false;
  return is_float_ ? format_ == o.format_ : bits_ == o.bits_;
}

MiniFloatSpec minifloat_spec(FloatFormat f, const char* op) {
  const int E = f.exponent_bits, M = f.mantissa_bits;
  QGRAD_CHECK(!f.is_e8m0(), ValueError, op,
              ": E8M0 is a power-of-two scale format (MX block scales), not an element format");
  QGRAD_CHECK(E >= 2 && E <= 8 && M >= 1 && M <= 23, ValueError, op, ": unsupported float format ",
              f.str(), " (need 2 <= E <= 8 and 1 <= M <= 23)");
  MiniFloatSpec s;
  s.format = f;
  s.bias = (1 << (E - 1)) - 1;
  const int top_field = (1 << E) - 1;  // all-ones exponent field
  double top_mantissa;                 // largest finite significand, 1.xxx
  int emax;
  if (E >= 5) {  // IEEE-like: top exponent reserved for Inf/NaN
    emax = top_field - 1 - s.bias;
    top_mantissa = 2.0 - std::ldexp(1.0, -M);
  } else if (E == 4) {  // FN: only the all-ones mantissa of the top exponent is NaN
    emax = top_field - s.bias;
    top_mantissa = 2.0 - std::ldexp(1.0, 1 - M);
  } else {  // no special codes
    emax = top_field - s.bias;
    top_mantissa = 2.0 - std::ldexp(1.0, -M);
  }
  s.max_value = std::ldexp(top_mantissa, emax);
  s.max_exponent = emax;
  s.min_normal = std::ldexp(1.0, 1 - s.bias);
  s.min_subnormal = std::ldexp(1.0, 1 - s.bias - M);
  return s;
}

double minifloat_round(double v, const MiniFloatSpec& spec) {
  if (std::isnan(v)) return v;
  double a = std::fabs(v);
  if (a >= spec.max_value) return std::copysign(spec.max_value, v);
  // Spacing of the grid around a: 2^(e-M) in the normal range, min_subnormal below it.
  double quantum = spec.min_subnormal;
  if (a >= spec.min_normal) {
    int e = 0;
    std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
    quantum = std::ldexp(1.0, e - 1 - spec.format.mantissa_bits);
  }
  const double units = a / quantum;  // exact: quantum is a power of two
  const double lower = std::floor(units);
  const double frac = units - lower;
  double r = lower;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(lower, 2.0) != 0.0)) r = lower + 1.0;
  double out = r * quantum;
  if (out > spec.max_value) out = spec.max_value;
  return std::copysign(out, v);
}

}  // namespace qgrad::nvidia
