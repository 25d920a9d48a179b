/// @file
/// AIMET v2's MinMaxEncodingAnalyzer: running min/max statistics reduced to an encoding shape
/// (broadcast from the trailing dims of the input), and the rule that turns them into an
/// encoding range (compute_encodings_from_stats), in float32 as AIMET computes it:
///   min0 = min(min, 0), max0 = max(max, 0)
///   adj = eps if (max0 - min0) / N < eps else 0        (N = 2^b - 1, eps = 2^-23)
///   symmetric:  max' = max0 + floor(N/2)*adj, min' = min0 - ceil(N/2)*adj,
///               delta = max(max' / floor(N/2), -min' / ceil(N/2)),
///               range = [-ceil(N/2)*delta, floor(N/2)*delta]
///   asymmetric: range = [min0, max0 + N*adj]
/// and both ends clamped to the finite float32 range.
/// With a process group (quant/synced_statistics.h) update_stats reduces each batch's statistics
/// over the ranks (min / max, element by element) before merging them, so the running statistics
/// and the batch encoding are those of the ranks' global batch.
#pragma once

#include <optional>
#include <utility>

#include "core/tensor.h"
#include "quant/synced_statistics.h"

namespace qgrad::aimet {

/// Running min/max statistics of the encoding shape.
struct MinMaxStats {
  Tensor min;  ///< undefined when nothing was observed
  Tensor max;  ///< undefined when nothing was observed
  /// True when nothing was observed.
  bool empty() const { return !min.defined(); }
};

/// Gathers min/max statistics reduced to an encoding shape and turns them into an encoding
/// range (AIMET's MinMaxEncodingAnalyzer; see the file comment).
class MinMaxEncodingAnalyzer : public quant::SyncedStatistics {
 public:
  /// shape: the encoding shape (ShapeError when a dim is below 1).
  explicit MinMaxEncodingAnalyzer(Shape shape);

  /// The encoding shape.
  const Shape& shape() const { return shape_; }
  /// The statistics of one batch (no state change). x must broadcast from the encoding shape.
  MinMaxStats collect_stats(const Tensor& x) const;
  /// Collects (with a group: reduced over the ranks), merges into the running statistics and
  /// returns the batch statistics.
  MinMaxStats update_stats(const Tensor& x);
  /// Forgets the running statistics.
  void reset_stats() { stats_ = MinMaxStats(); }
  /// The running statistics (empty() before any update).
  const MinMaxStats& stats() const { return stats_; }

  /// (min, max) of the encoding for the running statistics; empty when none were gathered.
  std::optional<std::pair<Tensor, Tensor>> compute_encodings(std::int64_t num_steps,
                                                             bool symmetric) const;
  /// (min, max) of the encoding for stats with num_steps = 2^b - 1 bins (the file comment's rule).
  /// ValueError when num_steps < 1, symmetric with num_steps < 2, or stats is empty.
  static std::pair<Tensor, Tensor> compute_encodings_from_stats(const MinMaxStats& stats,
                                                                std::int64_t num_steps,
                                                                bool symmetric);

 private:
  Shape shape_;
  MinMaxStats stats_;
};

}  // namespace qgrad::aimet
