// Python-style value formatting for module printouts.
#include "nn/repr_format.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace qgrad::nn {

std::string py_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  // Shortest round-trip digits in scientific form: "d.ddde±XX".
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string s(buf, res.ptr);
  const bool neg = s[0] == '-';
  if (neg) s.erase(0, 1);
  const auto e_pos = s.find('e');
  const int exp = std::atoi(s.c_str() + e_pos + 1);
  std::string digits;
  for (std::size_t i = 0; i < e_pos; ++i)
    if (s[i] != '.') digits.push_back(s[i]);
  std::string out;
  if (exp >= -4 && exp < 16) {
    const int ndig = static_cast<int>(digits.size());
    if (exp < 0) {
      out = "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
    } else if (exp + 1 >= ndig) {
      out = digits + std::string(static_cast<std::size_t>(exp + 1 - ndig), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<std::size_t>(exp + 1)) + "." +
            digits.substr(static_cast<std::size_t>(exp + 1));
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    const int a = std::abs(exp);
    out += std::string("e") + (exp < 0 ? "-" : "+") + (a < 10 ? "0" : "") + std::to_string(a);
  }
  return neg ? "-" + out : out;
}

std::string py_bool(bool v) {
  return v ? "True" : "False";
}

}  // namespace qgrad::nn
