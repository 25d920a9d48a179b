/// @file
/// DType: the element types a Tensor can hold, their sizes and names, the C++ type each maps to,
/// and the QGRAD_DISPATCH_* macros that turn a runtime dtype into a `scalar_t` for a kernel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace qgrad {

/// The element types a Tensor can hold. New dtypes are appended, so the enum's values stay stable.
enum class DType : std::uint8_t { Float32, Float64, Int8, UInt8, Int32, Int64, Int16 };

inline constexpr DType kFloat32 = DType::Float32;  ///< Shorthand for DType::Float32.
inline constexpr DType kFloat64 = DType::Float64;  ///< Shorthand for DType::Float64.
inline constexpr DType kInt8 = DType::Int8;        ///< Shorthand for DType::Int8.
inline constexpr DType kUInt8 = DType::UInt8;      ///< Shorthand for DType::UInt8.
inline constexpr DType kInt16 = DType::Int16;      ///< Shorthand for DType::Int16.
inline constexpr DType kInt32 = DType::Int32;      ///< Shorthand for DType::Int32.
inline constexpr DType kInt64 = DType::Int64;      ///< Shorthand for DType::Int64.

/// Size of one element of `d` in bytes.
std::size_t dtype_size(DType d);
const char* dtype_name(DType d);  ///< "float32", "int16", "int64", ...
/// The dtype named `name` ("float32", "int64", ...); throws DTypeError for an unknown name.
DType dtype_from_name(const std::string& name);
/// True for float32 and float64.
bool is_floating(DType d);
/// The dtype of `a op b` (PyTorch's promotion for same-category types: the wider one wins;
/// float beats int; int8 with uint8 gives int16).
DType promote_types(DType a, DType b);

/// The DType whose element type is T (`value`); defined for the seven element types only.
template <typename T>
struct dtype_of;
/// @cond
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::Float32;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::Float64;
};
template <>
struct dtype_of<std::int8_t> {
  static constexpr DType value = DType::Int8;
};
template <>
struct dtype_of<std::uint8_t> {
  static constexpr DType value = DType::UInt8;
};
template <>
struct dtype_of<std::int16_t> {
  static constexpr DType value = DType::Int16;
};
template <>
struct dtype_of<std::int32_t> {
  static constexpr DType value = DType::Int32;
};
template <>
struct dtype_of<std::int64_t> {
  static constexpr DType value = DType::Int64;
};
/// @endcond
/// The DType whose element type is T.
template <typename T>
inline constexpr DType dtype_v = dtype_of<T>::value;

/// True for the C++ types that are the element type of some DType.
template <typename T, typename = void>
struct has_dtype : std::false_type {};
template <typename T>
struct has_dtype<T, std::void_t<decltype(dtype_of<T>::value)>> : std::true_type {};
/// True for the C++ types that are the element type of some DType.
template <typename T>
inline constexpr bool has_dtype_v = has_dtype<T>::value;

}  // namespace qgrad

/// One `case` of the QGRAD_DISPATCH_* macros: runs the callable with `scalar_t` = `type`.
#define QGRAD_DISPATCH_CASE_(enum_value, type, ...) \
  case enum_value: {                                \
    using scalar_t = type;                          \
    return __VA_ARGS__();                           \
  }

/// QGRAD_DISPATCH_FLOAT(dtype, "op", [&] { kernel<scalar_t>(...); }) — float32/float64 only.
#define QGRAD_DISPATCH_FLOAT(dtype, op, ...)                              \
  [&] {                                                                   \
    switch (dtype) {                                                      \
      QGRAD_DISPATCH_CASE_(::qgrad::DType::Float32, float, __VA_ARGS__)   \
      QGRAD_DISPATCH_CASE_(::qgrad::DType::Float64, double, __VA_ARGS__)  \
      default:                                                            \
        throw ::qgrad::DTypeError(std::string(op) +                       \
                                  ": expected a floating dtype (float32 " \
                                  "or float64), got " +                   \
                                  ::qgrad::dtype_name(dtype));            \
    }                                                                     \
  }()

/// All seven dtypes.
#define QGRAD_DISPATCH_ALL(dtype, op, ...)                                   \
  [&] {                                                                      \
    switch (dtype) {                                                         \
      QGRAD_DISPATCH_CASE_(::qgrad::DType::Float32, float, __VA_ARGS__)      \
      QGRAD_DISPATCH_CASE_(::qgrad::DType::Float64, double, __VA_ARGS__)     \
      QGRAD_DISPATCH_CASE_(::qgrad::DType::Int8, std::int8_t, __VA_ARGS__)   \
      QGRAD_DISPATCH_CASE_(::qgrad::DType::UInt8, std::uint8_t, __VA_ARGS__) \
      QGRAD_DISPATCH_CASE_(::qgrad::DType::Int16, std::int16_t, __VA_ARGS__) \
      QGRAD_DISPATCH_CASE_(::qgrad::DType::Int32, std::int32_t, __VA_ARGS__) \
      QGRAD_DISPATCH_CASE_(::qgrad::DType::Int64, std::int64_t, __VA_ARGS__) \
    }                                                                        \
    throw ::qgrad::DTypeError(std::string(op) + ": unknown dtype");          \
  }()
