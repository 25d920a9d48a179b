// Argument validation shared by the quantization ops.
#include "quant/torch_ao/qparam_checks.h"

#include <cmath>
#include <string>
#include <utility>

#include "ops/device_check.h"

namespace qgrad::ao {

void check_quant_range(const char* op, std::int64_t quant_min, std::int64_t quant_max) {
  QGRAD_CHECK(quant_min <= quant_max, ValueError, op, ": quant_min (", quant_min,
              ") must not exceed quant_max (", quant_max, ")");
}

void check_scale_value(const char* op, const char* arg, double scale) {
  QGRAD_CHECK(std::isfinite(scale) && scale > 0, ValueError, op, ": ", arg,
              " must be finite and > 0, got ", scale);
}

void check_zero_point_value(const char* op, std::int64_t zero_point, std::int64_t quant_min,
                            std::int64_t quant_max) {
  QGRAD_CHECK(zero_point >= quant_min && zero_point <= quant_max, ValueError, op, ": zero_point ",
              zero_point, " must lie in [quant_min, quant_max] = [", quant_min, ", ", quant_max,
              "]");
}

std::int64_t normalize_channel_axis(const char* op, const Tensor& x, std::int64_t axis) {
  const std::int64_t d = x.dim();
  QGRAD_CHECK(d >= 1, IndexError, op,
              ": per-channel quantization needs at least 1 dim, got a 0-d "
              "tensor");
  QGRAD_CHECK(axis >= -d && axis < d, IndexError, op, ": axis ", axis,
              " out of range for a tensor of shape ", x.shape());
  return axis < 0 ? axis + d : axis;
}

std::vector<double> per_channel_floats(const char* op, const char* arg, const Tensor& t,
                                       std::int64_t channels) {
  require_floating(op, arg, t);
  QGRAD_CHECK(t.dim() == 1 && t.numel() == channels, ShapeError, op, ": ", arg,
              " must be 1-D with ", channels, " elements (one per channel), got shape ", t.shape());
  return t.to_vector<double>();
}

void check_broadcast_param(const char* op, const char* arg, const Tensor& p, const Tensor& x) {
  require_floating(op, arg, p);
  // The caller's kernel table lookup on x has checked x's device; p must live there too.
  check_same_device(op, x, p);
  QGRAD_CHECK(p.dtype() == x.dtype(), DTypeError, op, ": ", arg, " must have the input's dtype ",
              dtype_name(x.dtype()), ", got ", dtype_name(p.dtype()));
  bool ok = p.dim() <= x.dim();
  for (std::int64_t i = 1; ok && i <= p.dim(); ++i) {
    const std::int64_t ps = p.size(p.dim() - i), xs = x.size(x.dim() - i);
    ok = ps == 1 || ps == xs;
  }
  QGRAD_CHECK(ok, ShapeError, op, ": ", arg, " of shape ", p.shape(),
              " cannot be expanded like the input of shape ", x.shape());
}

double single_float(const char* op, const char* arg, const Tensor& t) {
  require_floating(op, arg, t);
  QGRAD_CHECK(t.numel() == 1 && t.dim() <= 1, ShapeError, op, ": ", arg,
              " must hold one element (shape [] or [1]), got shape ", t.shape());
  return t.item<double>();
}

void check_device_qparams(const char* op, const Tensor& x, const Tensor& scale,
                          const Tensor& zero_point, std::int64_t axis, std::int64_t quant_min,
                          std::int64_t quant_max) {
  constexpr std::int64_t kLimit = std::int64_t{1} << 23;
  QGRAD_CHECK(quant_min >= -kLimit && quant_max <= kLimit, ValueError, op, ": on ", x.device(),
              " quant_min (", quant_min, ") and quant_max (", quant_max,
              ") must lie in [-2^23, 2^23] (wider ranges, such as qint32's, run on the CPU only)");
  const std::int64_t n = axis < 0 ? 1 : x.size(axis);
  for (const auto& [arg, t] : {std::pair<const char*, const Tensor&>{"scale", scale},
                               std::pair<const char*, const Tensor&>{"zero_point", zero_point}}) {
    require_defined(op, arg, t);
    QGRAD_CHECK(t.device() == x.device(), DeviceError, op, ": ", arg,
                " must be on the input's device (", x.device(), "), got ", t.device());
    QGRAD_CHECK(axis < 0 ? t.numel() == 1 && t.dim() <= 1 : t.dim() == 1 && t.numel() == n,
                ShapeError, op, ": ", arg, " must hold ",
                axis < 0
                    ? std::string("one element")
                    : std::to_string(n) + " elements in 1 dim (one per channel of axis " +
                          std::to_string(axis) + " of input shape " + shape_str(x.shape()) + ")",
                ", got shape ", t.shape());
  }
}

}  // namespace qgrad::ao
