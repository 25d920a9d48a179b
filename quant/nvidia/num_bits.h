/// @file
/// Number formats of the NVIDIA quantizers: `NumBits` is either an integer bit width or an (E,M)
/// minifloat (E exponent bits, M mantissa bits), and `MiniFloatSpec` holds the constants of an
/// (E,M) format (bias, largest finite value, smallest normal and subnormal) plus a scalar
/// round-to-nearest-even cast with saturation, the reference the tensor kernels are tested against.
///
/// Which codes of an (E,M) format are special is not part of (E,M) itself; qgrad follows the OCP
/// 8-bit and microscaling (MX) specifications and generalises by exponent width:
///   E >= 5  IEEE-like: the top exponent is Inf/NaN   (E5M2: max 57344; E5M10 = fp16; E8M7 = bf16)
///   E == 4  "FN": only S.1111.1..1 is NaN, no Inf    (E4M3: max 448)
///   E <= 3  no special codes, every code is finite   (E2M1: max 6, E3M2: 28, E2M3: 7.5)
/// Supported: 2 <= E <= 8 and 1 <= M <= 23. (8,0) is E8M0, the power-of-two scale format of the MX
/// block formats; it is accepted only as a block `scale_bits`, never as an element format.
#pragma once

#include <string>

namespace qgrad::nvidia {

/// An (E,M) minifloat format: E exponent bits, M mantissa bits.
struct FloatFormat {
  int exponent_bits = 4;  ///< E
  int mantissa_bits = 3;  ///< M
  /// Same E and M.
  bool operator==(const FloatFormat& o) const {
    return exponent_bits == o.exponent_bits && mantissa_bits == o.mantissa_bits;
  }
  /// !(*this == o).
  bool operator!=(const FloatFormat& o) const { return !(*this == o); }
  /// E8M0, the MX scale-only format.
  bool is_e8m0() const { return exponent_bits == 8 && mantissa_bits == 0; }
  std::string str() const;  ///< "E4M3"
};

/// FP8 E4M3 (max 448).
inline constexpr FloatFormat kE4M3{4, 3};
/// FP8 E5M2 (max 57344).
inline constexpr FloatFormat kE5M2{5, 2};
/// FP4 E2M1 (max 6).
inline constexpr FloatFormat kE2M1{2, 1};
/// E8M0, the MX block scale format.
inline constexpr FloatFormat kE8M0{8, 0};

/// An integer bit width or an (E,M) float format, as modelopt's `num_bits` (int or tuple).
class NumBits {
 public:
  /// An integer width.
  NumBits(int bits = 8) : bits_(bits) {}  // NOLINT: implicit like the Python int argument
  /// A float format.
  NumBits(FloatFormat f) : bits_(0), format_(f), is_float_(true) {}  // NOLINT
  /// The float format (exponent_bits, mantissa_bits).
  NumBits(int exponent_bits, int mantissa_bits)
      : NumBits(FloatFormat{exponent_bits, mantissa_bits}) {}

  /// Whether this is an (E,M) format.
  bool is_float() const { return is_float_; }
  int bits() const { return bits_; }              ///< integer width (0 for float formats)
  FloatFormat format() const { return format_; }  ///< (E,M) (meaningless for integers)
  std::string str() const;                        ///< "8" or "(4, 3)"
  /// Same width, or same float format.
  bool operator==(const NumBits& o) const;
  /// !(*this == o).
  bool operator!=(const NumBits& o) const { return !(*this == o); }

 private:
  int bits_ = 8;
  FloatFormat format_{};
  bool is_float_ = false;
};

/// The constants of an (E,M) element format (minifloat_spec()).
struct MiniFloatSpec {
  FloatFormat format;        ///< the format
  int bias = 0;              ///< the exponent bias
  double max_value = 0;      ///< largest finite magnitude (saturation bound)
  double min_normal = 0;     ///< 2^(1-bias)
  double min_subnormal = 0;  ///< 2^(1-bias-M)
  int max_exponent = 0;      ///< floor(log2(max_value)), the MX "emax" of the element format
};

/// Constants of an element format; throws ValueError naming `op` for unsupported (E,M) (E8M0
/// included: it is a scale-only format).
MiniFloatSpec minifloat_spec(FloatFormat f, const char* op = "minifloat");

/// Rounds v to the nearest value of the format, ties to even; finite values beyond the largest
/// magnitude (and +-Inf) saturate to +-max_value; NaN stays NaN; the sign of zero is kept.
/// Plain double arithmetic: the independent reference for the vectorised kernels.
double minifloat_round(double v, const MiniFloatSpec& spec);

}  // namespace qgrad::nvidia
