// Reduction parsing and names.
#include "ops/loss/reduction.h"

#include "core/error.h"

namespace qgrad {

Reduction parse_reduction(const std::string& reduction, const char* op) {
  if (reduction == "mean") return Reduction::Mean;
  if (reduction == "sum") return Reduction::Sum;
  if (reduction == "none") return Reduction::None;
  throw ValueError(
      detail::concat(op, ": reduction must be 'none', 'mean' or 'sum', got '", reduction, "'"));
}

const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::None:
      return "none";
    case Reduction::Mean:
      return "mean";
    case Reduction::Sum:
      return "sum";
  }
  return "?";
}

}  // namespace qgrad
