// PyTorch-style printing: `tensor([[ 0.1000, -2.0000], ...], dtype=float64, requires_grad=True)`.
// Floats print with 4 decimals (or as `1.` when all values are integral, or in scientific notation
// when the range is wide); tensors over 1000 elements are summarised with `...`.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "core/autograd/node.h"
#include "core/tensor.h"

namespace qgrad {

namespace {

constexpr std::int64_t kSummariseAbove = 1000;
constexpr std::int64_t kEdgeItems = 3;

struct Formatter {
  bool floating = false;
  bool int_mode = false;
  bool sci_mode = false;

  explicit Formatter(const std::vector<double>& vals, bool is_float) : floating(is_float) {
    if (!floating) return;
    double amax = 0, amin_nz = INFINITY;
    bool all_int = true;
    for (double v : vals) {
      if (!std::isfinite(v)) continue;
      if (v != std::nearbyint(v)) all_int = false;
      double a = std::fabs(v);
      amax = std::max(amax, a);
      if (a > 0) amin_nz = std::min(amin_nz, a);
    }
    if (all_int) {
      int_mode = true;
      sci_mode = amax > 1e8;
    } else {
      sci_mode = amax > 1e8 || (amin_nz < 1e-4) || (amin_nz > 0 && amax / amin_nz > 1000.0);
    }
  }

  std::string operator()(double v) const {
    char buf[64];
    if (!floating) {
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    } else if (std::isnan(v)) {
      return "nan";
    } else if (std::isinf(v)) {
      return v > 0 ? "inf" : "-inf";
    } else if (sci_mode) {
      std::snprintf(buf, sizeof buf, "%.4e", v);
    } else if (int_mode) {
      std::snprintf(buf, sizeof buf, "%.0f.", v);
    } else {
      std::snprintf(buf, sizeof buf, "%.4f", v);
    }
    return buf;
  }
};

// Recursively writes dims [d..] of `vals` (row-major over `shape`), summarising long dims.
void write(std::ostream& os, const std::vector<std::string>& cells, const Shape& shape,
           const Shape& strides, std::size_t d, std::int64_t base, std::size_t width,
           std::size_t indent, bool summarise) {
  const std::int64_t n = shape[d];
  os << '[';
  auto emit_index = [&](std::int64_t i) {
    if (d + 1 == shape.size()) {
      const std::string& c = cells[static_cast<std::size_t>(base + i * strides[d])];
      os << std::string(width - std::min(width, c.size()), ' ') << c;
    } else {
      write(os, cells, shape, strides, d + 1, base + i * strides[d], width, indent + 1, summarise);
    }
  };
  const std::string sep = d + 1 == shape.size() ? ", "
                                                : "," + std::string(shape.size() - d - 1, '\n') +
                                                      std::string(indent + 1, ' ');
  for (std::int64_t i = 0; i < n; ++i) {
    if (summarise && n > 2 * kEdgeItems && i == kEdgeItems) {
      os << sep << "...";
      i = n - kEdgeItems;
    }
    if (i > 0) os << sep;
    emit_index(i);
  }
  os << ']';
}

}  // namespace

std::string Tensor::str() const {
  std::ostringstream os;
  if (!defined()) return "tensor(undefined)";
  const bool fl = is_floating(dtype());
  const bool summarise = numel() > kSummariseAbove;
  // Gather the elements to print (all, or the edges of every dim).
  Tensor c = device().is_cpu() ? detach() : detach().to(kCPU);
  std::vector<double> vals = c.to_vector<double>();
  const Shape& sh = shape();
  const Shape st = contiguous_strides(sh);
  std::vector<double> shown;
  if (summarise) {
    for (std::int64_t i = 0; i < numel(); ++i) {
      bool keep = true;
      std::int64_t rem = i;
      for (std::size_t d = 0; d < sh.size(); ++d) {
        std::int64_t idx = rem / st[d];
        rem %= st[d];
        if (sh[d] > 2 * kEdgeItems && idx >= kEdgeItems && idx < sh[d] - kEdgeItems) keep = false;
      }
      if (keep) shown.push_back(vals[static_cast<std::size_t>(i)]);
    }
  }
  Formatter fmt(summarise ? shown : vals, fl);
  std::vector<std::string> cells(vals.size());
  std::size_t width = 0;
  for (std::size_t i = 0; i < vals.size(); ++i) {
    cells[i] = fmt(vals[i]);
    width = std::max(width, cells[i].size());
  }
  if (summarise) {
    width = 0;
    for (double v : shown) width = std::max(width, fmt(v).size());
  }
  os << "tensor(";
  if (sh.empty()) {
    os << (cells.empty() ? "" : cells[0]);
  } else if (numel() == 0) {
    os << "[]";
  } else {
    write(os, cells, sh, st, 0, 0, width, 7, summarise);
  }
  if (numel() == 0 && sh.size() > 1) os << ", size=" << shape_str(sh);
  if (device().is_cuda()) os << ", device='" << device().str() << "'";
  if (dtype() != kFloat32 && dtype() != kInt64) os << ", dtype=" << dtype_name(dtype());
  if (grad_fn())
    os << ", grad_fn=<" << grad_fn()->name() << ">";
  else if (requires_grad())
    os << ", requires_grad=True";
  os << ')';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  return os << t.str();
}

}  // namespace qgrad
