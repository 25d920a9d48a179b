/// @file
/// SyncedStatistics: the mixin through which a quantizer's statistics are synchronised across the
/// ranks of a data-parallel job. A class that gathers batch statistics (observers, calibrators,
/// encoding analyzers, data-driven initialisations) derives from it and passes each batch
/// statistic through one of its helpers before folding it into its running state, so every rank
/// updates that state from the statistic of the global batch (the concatenation of the ranks'
/// parts in rank order) and holds the same bits. The reduction suits the statistic: minima and
/// maxima are folded in rank order with NaN propagating and the earlier rank kept on a tie (so a
/// zero extreme keeps the sign a sequential scan of the global batch gives it); counts are summed
/// (exact integers); a zero point is never reduced, it is recomputed from the reduced range.
/// Without a group, or with a group of one rank, every helper is a no-op and costs nothing. Every
/// rank must reach the same helpers in the same order (they are collectives).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "distributed/process_group.h"

namespace qgrad::quant {

/// The mixin of the classes whose statistics are synchronised across ranks (see the file
/// comment).
class SyncedStatistics {
 public:
  virtual ~SyncedStatistics() = default;

  /// Statistics are reduced over `group` from the next batch on; null stops it. Modules that own
  /// other synchronised objects override it to pass the group on.
  virtual void set_process_group(std::shared_ptr<distributed::ProcessGroup> group);
  /// The group (null when none was set).
  const std::shared_ptr<distributed::ProcessGroup>& process_group() const { return group_; }
  /// Whether the helpers reduce anything: a group of more than one rank is set.
  bool statistics_synced() const { return group_ != nullptr && group_->size() > 1; }

 protected:
  /// Without a group: a mixin, built by the classes that derive from it.
  SyncedStatistics() = default;
  /// A copy shares the group (copyable state classes stay copyable).
  SyncedStatistics(const SyncedStatistics&) = default;
  /// Takes the other's group.
  SyncedStatistics& operator=(const SyncedStatistics&) = default;

  /// Reduces `t` (any floating or integer dtype, any device, any strides) in place with `op`
  /// (distributed::ProcessGroup::all_reduce); ShapeError on every rank when the ranks' sizes
  /// differ. Sums of floating values depend on the order of
  /// the ranks; use it for exact quantities (integer counts, minima, maxima of magnitudes).
  void reduce_statistic(Tensor& t, distributed::ReduceOp op) const;
  /// The (min, max) of the global batch from this rank's (min, max), in one collective.
  void reduce_min_max(float& mn, float& mx) const;
  /// The per-channel (min, max) of the global batch, element by element, in one collective; the
  /// sizes must agree (ShapeError naming the op otherwise, on every rank).
  void reduce_min_max(std::vector<float>& mn, std::vector<float>& mx) const;
  /// As above, in float64.
  void reduce_min_max(std::vector<double>& mn, std::vector<double>& mx) const;
  /// As above for tensors of one shape (floating, any device; their values are replaced in
  /// place, so handles on them see the reduced values).
  void reduce_min_max(Tensor& mn, Tensor& mx) const;
  /// Element-wise sums over the ranks, added in rank order (the same bits on every rank).
  void reduce_sum(std::vector<std::int64_t>& v) const;
  /// As above, in float64 (the sum of the ranks' partial sums: not the bits of one sequential
  /// sum over the global batch; see the callers for the tolerance).
  void reduce_sum(std::vector<double>& v) const;
  /// True on every rank when `flag` is true on any rank (agreed errors: a check failing on one
  /// rank only would leave the others waiting in the next collective).
  bool any_rank(bool flag) const;

 private:
  std::shared_ptr<distributed::ProcessGroup> group_;
};

}  // namespace qgrad::quant
