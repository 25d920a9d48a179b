// DType helpers: sizes, names and type promotion.
#include "core/dtype.h"

#include "core/error.h"

namespace qgrad {

std::size_t dtype_size(DType d) {
  switch (d) {
    case DType::Float32:
      return 4;
    case DType::Float64:
      return 8;
    case DType::Int8:
      return 1;
    case DType::UInt8:
      return 1;
    case DType::Int16:
      return 2;
    case DType::Int32:
      return 4;
    case DType::Int64:
      return 8;
  }
  throw DTypeError("dtype_size: unknown dtype");
}

const char* dtype_name(DType d) {
  switch (d) {
    case DType::Float32:
      return "float32";
    case DType::Float64:
      return "float64";
    case DType::Int8:
      return "int8";
    case DType::UInt8:
      return "uint8";
    case DType::Int16:
      return "int16";
    case DType::Int32:
      return "int32";
    case DType::Int64:
      return "int64";
  }
  return "unknown";
}

DType dtype_from_name(const std::string& name) {
  for (DType d : {DType::Float32, DType::Float64, DType::Int8, DType::UInt8, DType::Int16,
                  DType::Int32, DType::Int64}) {
    if (name == dtype_name(d)) return d;
  }
  throw DTypeError("dtype_from_name: unknown dtype '" + name +
                   "' (expected float32, float64, int8, uint8, int16, int32 or int64)");
}

bool is_floating(DType d) {
  return d == DType::Float32 || d == DType::Float64;
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (is_floating(a) || is_floating(b)) {
    if (a == DType::Float64 || b == DType::Float64) return DType::Float64;
    return DType::Float32;
  }
  // Both integer: the wider wins; int8 and uint8 (neither holds the other) meet in int16, as
  // in PyTorch.
  auto rank = [](DType d) {
    switch (d) {
      case DType::Int8:
        return 1;
      case DType::UInt8:
        return 1;
      case DType::Int16:
        return 2;
      case DType::Int32:
        return 3;
      case DType::Int64:
        return 4;
      default:
        return 0;
    }
  };
  if (rank(a) == 1 && rank(b) == 1) return DType::Int16;
  return rank(a) >= rank(b) ? a : b;
}

}  // namespace qgrad
