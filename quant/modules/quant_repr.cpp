// Tensor value formatting for quantizer printouts.
#include "quant/modules/quant_repr.h"

#include <cmath>

#include "nn/repr_format.h"

namespace qgrad::quant {

std::string values_repr(const Tensor& t, std::size_t max_items) {
  if (!t.defined()) return "None";
  const std::vector<double> v = t.to_vector<double>();
  auto one = [&](double x) {
    if (!is_floating(t.dtype())) return std::to_string(static_cast<long long>(x));
    return nn::py_float(x);
  };
  if (v.size() == 1 && t.dim() <= 1) return one(v[0]);
  std::string s = "[";
  for (std::size_t i = 0; i < v.size() && i < max_items; ++i) s += (i ? ", " : "") + one(v[i]);
  if (v.size() > max_items) s += ", ...";
  return s + "]";
}

}  // namespace qgrad::quant
