/// @file
/// The qgrad exception hierarchy and the QGRAD_CHECK macro. Every user-facing error names the op,
/// the offending argument and what was expected; nothing in qgrad aborts on bad input.
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace qgrad {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
class ShapeError : public Error {
 public:
  using Error::Error;
};
class DTypeError : public Error {
 public:
  using Error::Error;
};
class DeviceError : public Error {
 public:
  using Error::Error;
};
class IndexError : public Error {
 public:
  using Error::Error;
};
class ValueError : public Error {
 public:
  using Error::Error;
};
class AutogradError : public Error {
 public:
  using Error::Error;
};
class IOError : public Error {
 public:
  using Error::Error;
};

namespace detail {
inline void append(std::ostringstream& os, const std::vector<std::int64_t>& v) {
  os << '[';
  for (std::size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << ']';
}
template <typename T>
void append(std::ostringstream& os, const T& v) {
  os << v;
}
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (append(os, args), ...);
  return os.str();
}
}  // namespace detail

}  // namespace qgrad

/// QGRAD_CHECK(cond, ShapeError, "matmul: ", a.shape(), " vs ", b.shape());
#define QGRAD_CHECK(cond, ErrorType, ...)                                        \
  do {                                                                           \
    if (!(cond)) throw ::qgrad::ErrorType(::qgrad::detail::concat(__VA_ARGS__)); \
  } while (0)
