// AIMET min/max statistics and the statistics -> range rule, element by element in float32.
#include "quant/aimet/minmax_encoding_analyzer.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "ops/device_check.h"
#include "ops/reduce/reduce.h"

namespace qgrad::aimet {

namespace {
constexpr float kMinimumScale = 1.1920928955078125e-07f;
}

MinMaxEncodingAnalyzer::MinMaxEncodingAnalyzer(Shape shape) : shape_(std::move(shape)) {
  for (std::int64_t d : shape_)
    QGRAD_CHECK(d >= 1, ShapeError, "aimet.MinMaxEncodingAnalyzer: invalid encoding shape ",
                shape_);
}

MinMaxStats MinMaxEncodingAnalyzer::collect_stats(const Tensor& x) const {
  const char* op = "aimet.MinMaxEncodingAnalyzer";
  require_floating(op, "input", x);
  require_cpu(op, x);
  QGRAD_CHECK(x.numel() > 0, ValueError, op, ": cannot collect statistics of an empty tensor");
  const std::int64_t nd = x.dim(), ne = static_cast<std::int64_t>(shape_.size());
  bool ok = ne <= nd;
  Shape dims;
  for (std::int64_t d = 0; ok && d < nd; ++d) {
    const std::int64_t e = d - (nd - ne);
    if (e < 0) {
      dims.push_back(d);
    } else if (shape_[static_cast<std::size_t>(e)] == 1) {
      if (x.size(d) != 1) dims.push_back(d);
    } else {
      ok = shape_[static_cast<std::size_t>(e)] == x.size(d);
    }
  }
  QGRAD_CHECK(ok, ShapeError, op, ": encoding shape ", shape_,
              " cannot be expanded like the input of shape ", x.shape());
  NoGradGuard no_grad;
  const Tensor xd = x.detach();
  Tensor mn = dims.empty() ? xd.clone() : amin(xd, dims, /*keepdim=*/true);
  Tensor mx = dims.empty() ? xd.clone() : amax(xd, dims, /*keepdim=*/true);
  return {mn.reshape(shape_), mx.reshape(shape_)};
}

MinMaxStats MinMaxEncodingAnalyzer::update_stats(const Tensor& x) {
  MinMaxStats batch = collect_stats(x);
  if (stats_.empty()) {
    stats_ = {batch.min.clone(), batch.max.clone()};
  } else {
    NoGradGuard no_grad;
    QGRAD_CHECK(stats_.min.dtype() == batch.min.dtype(), DTypeError,
                "aimet.MinMaxEncodingAnalyzer: batch dtype ", dtype_name(batch.min.dtype()),
                " differs from the running statistics' ", dtype_name(stats_.min.dtype()));
    const std::vector<double> a = stats_.min.to_vector<double>(), b = batch.min.to_vector<double>();
    const std::vector<double> c = stats_.max.to_vector<double>(), d = batch.max.to_vector<double>();
    std::vector<double> mn(a.size()), mx(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      mn[i] = (std::isnan(a[i]) || std::isnan(b[i])) ? std::nan("") : std::min(a[i], b[i]);
      mx[i] = (std::isnan(c[i]) || std::isnan(d[i])) ? std::nan("") : std::max(c[i], d[i]);
    }
    const TensorOptions o = TensorOptions().dtype(stats_.min.dtype());
    // (from_vector reads an empty shape as 1-D, so build 1-D and reshape to the encoding shape.)
    const Shape flat{static_cast<std::int64_t>(mn.size())};
    stats_ = {from_vector<double>(mn, flat, o).reshape(shape_),
              from_vector<double>(mx, flat, o).reshape(shape_)};
  }
  return batch;
}

std::optional<std::pair<Tensor, Tensor>> MinMaxEncodingAnalyzer::compute_encodings(
    std::int64_t num_steps, bool symmetric) const {
  if (stats_.empty()) return std::nullopt;
  return compute_encodings_from_stats(stats_, num_steps, symmetric);
}

std::pair<Tensor, Tensor> MinMaxEncodingAnalyzer::compute_encodings_from_stats(
    const MinMaxStats& stats, std::int64_t num_steps, bool symmetric) {
  const char* op = "aimet.MinMaxEncodingAnalyzer.compute_encodings";
  QGRAD_CHECK(num_steps > 0, ValueError, op, ": the number of quantization bins must be > 0, got ",
              num_steps);
  QGRAD_CHECK(!symmetric || num_steps >= 2, ValueError, op,
              ": symmetric encodings need at least 2 quantization bins, got ", num_steps);
  QGRAD_CHECK(!stats.empty(), ValueError, op, ": no statistics present to compute encodings");
  // AIMET computes in the statistics' dtype (float32 in practice); the rule is applied in T.
  Tensor out_min = empty(stats.min.shape(), TensorOptions().dtype(stats.min.dtype()));
  Tensor out_max = empty(stats.max.shape(), TensorOptions().dtype(stats.max.dtype()));
  QGRAD_DISPATCH_FLOAT(stats.min.dtype(), op, [&] {
    using T = scalar_t;
    const std::vector<double> lo = stats.min.to_vector<double>(),
                              hi = stats.max.to_vector<double>();
    T* pmin = out_min.data_ptr<T>();
    T* pmax = out_max.data_ptr<T>();
    const T n = static_cast<T>(num_steps);
    const std::int64_t pos_steps = num_steps / 2, neg_steps = (num_steps + 1) / 2;
    const T eps = static_cast<T>(kMinimumScale);
    const T big = std::numeric_limits<T>::max();
    for (std::size_t i = 0; i < lo.size(); ++i) {
      const T min0 = std::min(static_cast<T>(lo[i]), T(0));
      const T max0 = std::max(static_cast<T>(hi[i]), T(0));
      const T diff = (max0 - min0) / n;
      const T adj = diff < eps ? eps : T(0);
      T umin, umax;
      if (symmetric) {
        umax = max0 + static_cast<T>(pos_steps) * adj;
        umin = min0 - static_cast<T>(neg_steps) * adj;
        const T delta =
            std::max(umax / static_cast<T>(pos_steps), -umin / static_cast<T>(neg_steps));
        umin = static_cast<T>(-neg_steps) * delta;
        umax = static_cast<T>(pos_steps) * delta;
      } else {
        umax = max0 + n * adj;
        umin = min0;
      }
      pmax[i] = std::min(umax, big);
      pmin[i] = std::max(umin, -big);
    }
  });
  return {out_min, out_max};
}

}  // namespace qgrad::aimet
