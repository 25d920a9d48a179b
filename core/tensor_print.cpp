// PyTorch-style printing, following torch/_tensor_str.py (1.13) with its default options
// (precision 4, threshold 1000, edgeitems 3, linewidth 80):
//   tensor([[ 0.1000, -2.0000],
//           [ 3.0000,  4.5000]], dtype=float64, requires_grad=True)
// Floats print with 4 decimals, as `1.` when all values are integral, or in scientific notation
// when the range is wide; columns are right-aligned to one width; rows wrap at 80 columns;
// tensors over 1000 elements show only 3 edge items per dim with `...`. Our dtype suffix reads
// `dtype=float64` (PyTorch: `dtype=torch.float64`).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/autograd/node.h"
#include "core/tensor.h"

namespace qgrad {

namespace {

constexpr std::int64_t kThreshold = 1000;
constexpr std::int64_t kEdgeItems = 3;
constexpr std::size_t kLineWidth = 80;
constexpr int kPrecision = 4;

// fmt is "%.*e" or "%.*f"; same digits as Python's '{:.4e}' / '{:.4f}' (both round exactly).
std::string printf_double(const char* fmt, int precision, double v) {
  char buf[400];  // %.4f of 1e308 needs 315 characters
  std::snprintf(buf, sizeof buf, fmt, precision, v);
  return buf;
}

// Chooses the notation and the common column width from the values that will be shown
// (_Formatter in PyTorch). Only non-zero finite values decide the mode and the width.
class Formatter {
 public:
  Formatter(bool floating, const std::vector<double>& fvals, const std::vector<std::int64_t>& ivals)
      : floating_(floating) {
    if (!floating_) {
      for (std::int64_t v : ivals) width_ = std::max(width_, std::to_string(v).size());
      return;
    }
    std::vector<double> nz;
    for (double v : fvals)
      if (std::isfinite(v) && v != 0) nz.push_back(v);
    if (nz.empty()) return;
    double amin = INFINITY, amax = 0;
    for (double v : nz) {
      amin = std::min(amin, std::fabs(v));
      amax = std::max(amax, std::fabs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    sci_mode_ = amax / amin > 1000.0 || amax > 1.0e8 || (!int_mode_ && amin < 1.0e-4);
    for (double v : nz) {
      std::size_t w = sci_mode_   ? printf_double("%.*e", kPrecision, v).size()
                      : int_mode_ ? printf_double("%.*f", 0, v).size() + 1
                                  : printf_double("%.*f", kPrecision, v).size();
      width_ = std::max(width_, w);
    }
  }

  std::size_t width() const { return width_; }

  // Right-aligned to width(); values wider than that (nan/inf) are not cut.
  std::string format_float(double v) const {
    std::string s;
    if (std::isnan(v)) {
      s = "nan";  // never "-nan", as Python
    } else if (std::isinf(v)) {
      s = v > 0 ? "inf" : "-inf";
    } else if (sci_mode_) {
      s = printf_double("%.*e", kPrecision, v);
    } else if (int_mode_) {
      s = printf_double("%.*f", 0, v) + ".";
    } else {
      s = printf_double("%.*f", kPrecision, v);
    }
    return pad(s);
  }
  std::string format_int(std::int64_t v) const { return pad(std::to_string(v)); }

 private:
  std::string pad(const std::string& s) const {
    return s.size() >= width_ ? s : std::string(width_ - s.size(), ' ') + s;
  }
  bool floating_;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  std::size_t width_ = 1;
};

// Prints a contiguous CPU copy of the tensor: element (i0, i1, ...) is at sum(ik * stride_k).
class Printer {
 public:
  Printer(const Tensor& c, bool summarise) : shape_(c.shape()), summarise_(summarise) {
    strides_ = contiguous_strides(shape_);
    floating_ = is_floating(c.dtype());
    if (floating_)
      fvals_ = c.to_vector<double>();
    else
      ivals_ = c.to_vector<std::int64_t>();
  }

  std::string str() {
    // The formatter sees only what will be shown.
    std::vector<double> fshown;
    std::vector<std::int64_t> ishown;
    for_each_shown(0, 0, [&](std::int64_t k) {
      if (floating_)
        fshown.push_back(fvals_[static_cast<std::size_t>(k)]);
      else
        ishown.push_back(ivals_[static_cast<std::size_t>(k)]);
    });
    fmt_ = std::make_unique<Formatter>(floating_, fshown, ishown);
    if (shape_.empty()) return cell(0);
    return block(0, 0, 7);  // indent = strlen("tensor(")
  }

 private:
  bool elided(std::int64_t n) const { return summarise_ && n > 2 * kEdgeItems; }
  // The indices of a dim that are shown (all, or the first and last kEdgeItems).
  std::vector<std::int64_t> shown_indices(std::int64_t n) const {
    std::vector<std::int64_t> idx;
    for (std::int64_t i = 0; i < n; ++i) {
      if (elided(n) && i == kEdgeItems) i = n - kEdgeItems;
      idx.push_back(i);
    }
    return idx;
  }
  template <typename F>
  void for_each_shown(std::size_t d, std::int64_t base, F&& f) const {
    if (d == shape_.size()) return f(base);
    for (std::int64_t i : shown_indices(shape_[d]))
      for_each_shown(d + 1, base + i * strides_[d], f);
  }

  std::string cell(std::int64_t k) const {
    const auto u = static_cast<std::size_t>(k);
    return floating_ ? fmt_->format_float(fvals_[u]) : fmt_->format_int(ivals_[u]);
  }

  // Dims [d..] starting at element `base`; `indent` is the column of this block's '['.
  std::string block(std::size_t d, std::int64_t base, std::size_t indent) const {
    const std::int64_t n = shape_[d];
    if (d + 1 == shape_.size()) {
      // One row: elements joined by ", ", wrapped to fit the line width.
      std::vector<std::string> items;
      for (std::int64_t i : shown_indices(n)) {
        if (elided(n) && i == n - kEdgeItems) items.push_back(" ...");
        items.push_back(cell(base + i * strides_[d]));
      }
      const std::size_t per_line = std::max<std::size_t>(
          1, (kLineWidth - std::min(kLineWidth, indent)) / (fmt_->width() + 2));
      std::string out = "[";
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += i % per_line == 0 ? ",\n" + std::string(indent + 1, ' ') : ", ";
        out += items[i];
      }
      return out + "]";
    }
    const std::string sep =
        "," + std::string(shape_.size() - d - 1, '\n') + std::string(indent + 1, ' ');
    std::string out = "[";
    bool first = true;
    for (std::int64_t i : shown_indices(n)) {
      if (!first) out += sep;
      if (elided(n) && i == n - kEdgeItems) out += "..." + sep;
      out += block(d + 1, base + i * strides_[d], indent + 1);
      first = false;
    }
    return out + "]";
  }

  Shape shape_, strides_;
  bool summarise_;
  bool floating_ = false;
  std::vector<double> fvals_;
  std::vector<std::int64_t> ivals_;
  std::unique_ptr<Formatter> fmt_;
};

std::string tuple_str(const Shape& sh) {
  std::string s = "(";
  for (std::size_t i = 0; i < sh.size(); ++i) s += (i ? ", " : "") + std::to_string(sh[i]);
  return s + (sh.size() == 1 ? ",)" : ")");
}

// Appends ", suffix" or, when the current line would pass the line width, ",\n" + indent +
// suffix (_add_suffixes).
std::string add_suffixes(std::string s, const std::vector<std::string>& suffixes,
                         std::size_t indent) {
  const std::size_t nl = s.rfind('\n');
  // PyTorch's len(s) - s.rfind('\n') + 1, where rfind gives -1 when there is no newline.
  std::size_t last_line_len = nl == std::string::npos ? s.size() + 2 : s.size() - nl + 1;
  for (const std::string& suffix : suffixes) {
    if (last_line_len + suffix.size() + 2 > kLineWidth) {
      s += ",\n" + std::string(indent, ' ') + suffix;
      last_line_len = indent + suffix.size();
    } else {
      s += ", " + suffix;
      last_line_len += suffix.size() + 2;
    }
  }
  return s + ")";
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  std::vector<std::string> suffixes;
  if (device().is_cuda()) suffixes.push_back("device='" + device().str() + "'");
  std::string body;
  if (numel() == 0) {
    // No elements to infer the dtype from: only float32 goes without saying.
    if (dim() != 1) suffixes.push_back("size=" + tuple_str(shape()));
    if (dtype() != kFloat32) suffixes.push_back(std::string("dtype=") + dtype_name(dtype()));
    body = "[]";
  } else {
    if (dtype() != kFloat32 && dtype() != kInt64)
      suffixes.push_back(std::string("dtype=") + dtype_name(dtype()));
    Tensor c = device().is_cpu() ? detach() : detach().to(kCPU);
    body = Printer(c, numel() > kThreshold).str();
  }
  if (grad_fn())
    suffixes.push_back("grad_fn=<" + grad_fn()->name() + ">");
  else if (requires_grad())
    suffixes.push_back("requires_grad=True");
  return add_suffixes("tensor(" + body, suffixes, 7);
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  return os << t.str();
}

}  // namespace qgrad
