// AIMET min/max statistics (amin / amax reductions of the batch, merged by the
// "aimet.minmax_merge" kernel) and the statistics -> range rule (the "aimet.minmax_encodings"
// kernel), all on the statistics' device.
#include "quant/aimet/minmax_encoding_analyzer.h"

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "ops/device_check.h"
#include "ops/reduce/reduce.h"
#include "quant/aimet/minmax_encoding_kernels.h"

namespace qgrad::aimet {

MinMaxEncodingAnalyzer::MinMaxEncodingAnalyzer(Shape shape) : shape_(std::move(shape)) {
  for (std::int64_t d : shape_)
    QGRAD_CHECK(d >= 1, ShapeError, "aimet.MinMaxEncodingAnalyzer: invalid encoding shape ",
                shape_);
}

MinMaxStats MinMaxEncodingAnalyzer::collect_stats(const Tensor& x) const {
  // No kernel table of its own: the amin / amax reductions below dispatch on x's device.
  const char* op = "aimet.MinMaxEncodingAnalyzer";
  require_floating(op, "input", x);
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
  static const KernelTable<MinMaxMergeKernel>& table = kernel_table(kMinMaxMergeKernels);
  const char* op = "aimet.MinMaxEncodingAnalyzer";
  MinMaxStats batch = collect_stats(x);
  reduce_min_max(batch.min, batch.max);  // the global batch's (a no-op without a group)
  // Looked up on every batch, so a device without a merge kernel fails before any state changes.
  MinMaxMergeKernel& merge = table(op, batch.min);
  if (stats_.empty()) {
    stats_ = {batch.min.clone(), batch.max.clone()};
  } else {
    NoGradGuard no_grad;
    QGRAD_CHECK(stats_.min.dtype() == batch.min.dtype(), DTypeError,
                "aimet.MinMaxEncodingAnalyzer: batch dtype ", dtype_name(batch.min.dtype()),
                " differs from the running statistics' ", dtype_name(stats_.min.dtype()));
    check_same_device(op, stats_.min, batch.min);
    auto [mn, mx] = merge(stats_.min, stats_.max, batch.min, batch.max);
    stats_ = {std::move(mn), std::move(mx)};
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
  static const KernelTable<MinMaxEncodingsKernel>& table = kernel_table(kMinMaxEncodingsKernels);
  MinMaxEncodingsKernel& kernel = table(op, stats.min);
  Tensor out_min =
      empty(stats.min.shape(), TensorOptions().dtype(stats.min.dtype()).device(stats.min.device()));
  Tensor out_max =
      empty(stats.max.shape(), TensorOptions().dtype(stats.max.dtype()).device(stats.max.device()));
  kernel(stats.min, stats.max, num_steps, symmetric, out_min, out_max);
  return {out_min, out_max};
}

}  // namespace qgrad::aimet
