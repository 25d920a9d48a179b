// SyncedStatistics' helpers. Minima, maxima and float64 sums are gathered from every rank and
// folded on the host in rank order, so the result does not depend on how the back end combines
// the ranks and is the same bits on every rank; the statistics are small (one value or one per
// channel), so the gather costs what an all-reduce would.
#include "quant/synced_statistics.h"

#include <cmath>
#include <string>

#include "core/autograd/grad_mode.h"
#include "core/device.h"
#include "core/error.h"
#include "core/factory.h"

namespace qgrad::quant {

namespace {

// torch.min / torch.max of the running fold `a` and the next rank's `b`: NaN wins; on a tie the
// earlier rank's value stays, as a sequential scan keeps its first extreme (ObservedRange).
double fold_min(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
  return b < a ? b : a;
}
double fold_max(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
  return b > a ? b : a;
}

// ShapeError on every rank when the ranks' sizes differ (unequal collectives are undefined:
// MPI may abort).
void check_same_size(distributed::ProcessGroup& g, std::int64_t n, const char* what) {
  const std::vector<Tensor> sizes = g.all_gather(from_vector<std::int64_t>({n}, {1}));
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    const std::int64_t other = sizes[r].to_vector<std::int64_t>()[0];
    QGRAD_CHECK(other == n, ShapeError, "synchronised statistics (", what, "): rank ", r, " has ",
                other, " values but rank ", g.rank(), " has ", n,
                "; every rank must observe batches of the same channel count");
  }
}

// Every rank's `local`, in rank order; with check_sizes, check_same_size first (one more, tiny,
// collective).
template <typename T>
std::vector<std::vector<T>> gather(distributed::ProcessGroup& g, const std::vector<T>& local,
                                   const char* what, bool check_sizes) {
  NoGradGuard no_grad;
  const auto n = static_cast<std::int64_t>(local.size());
  if (check_sizes) check_same_size(g, n, what);
  std::vector<std::vector<T>> out;
  if (n == 0) {
    out.assign(static_cast<std::size_t>(g.size()), {});
    return out;
  }
  for (const Tensor& t : g.all_gather(from_vector<T>(local, {n}))) out.push_back(t.to_vector<T>());
  return out;
}

// [mn..., mx...] folded over the ranks in rank order.
void fold_min_max(distributed::ProcessGroup& g, std::vector<double>& mn, std::vector<double>& mx,
                  const char* what, bool check_sizes) {
  QGRAD_CHECK(mn.size() == mx.size(), ShapeError, "synchronised statistics (", what,
              "): ", mn.size(), " minima but ", mx.size(), " maxima");
  std::vector<double> packed(mn);
  packed.insert(packed.end(), mx.begin(), mx.end());
  const std::vector<std::vector<double>> all = gather(g, packed, what, check_sizes);
  const std::size_t n = mn.size();
  for (std::size_t i = 0; i < n; ++i) {
    double lo = all[0][i], hi = all[0][n + i];
    for (std::size_t r = 1; r < all.size(); ++r) {
      lo = fold_min(lo, all[r][i]);
      hi = fold_max(hi, all[r][n + i]);
    }
    mn[i] = lo;
    mx[i] = hi;
  }
}

}  // namespace

void SyncedStatistics::set_process_group(std::shared_ptr<distributed::ProcessGroup> group) {
  group_ = std::move(group);
}

void SyncedStatistics::reduce_statistic(Tensor& t, distributed::ReduceOp op) const {
  if (!statistics_synced()) return;
  QGRAD_CHECK(t.defined(), ValueError,
              "synchronised statistics: reduce_statistic of an undefined "
              "tensor");
  NoGradGuard no_grad;
  check_same_size(*group_, t.numel(), "reduce_statistic");
  const DType d = t.dtype();
  const bool native = d == kFloat32 || d == kFloat64 || d == kInt32 || d == kInt64;
  if (native && t.is_contiguous()) {
    group_->all_reduce(t, op);
    t.bump_version();
    return;
  }
  // Other dtypes go through one that holds their values exactly (min, max, integer sums).
  Tensor work = t.to(native ? d : (is_floating(d) ? kFloat64 : kInt64)).contiguous().clone();
  group_->all_reduce(work, op);
  t.copy_(work.to(d));
}

void SyncedStatistics::reduce_min_max(float& mn, float& mx) const {
  if (!statistics_synced()) return;
  std::vector<double> lo{mn}, hi{mx};
  fold_min_max(*group_, lo, hi, "min / max", /*check_sizes=*/false);
  mn = static_cast<float>(lo[0]);
  mx = static_cast<float>(hi[0]);
}

void SyncedStatistics::reduce_min_max(std::vector<float>& mn, std::vector<float>& mx) const {
  if (!statistics_synced()) return;
  std::vector<double> lo(mn.begin(), mn.end()), hi(mx.begin(), mx.end());
  fold_min_max(*group_, lo, hi, "per-channel min / max", /*check_sizes=*/true);
  for (std::size_t i = 0; i < lo.size(); ++i) {
    mn[i] = static_cast<float>(lo[i]);  // exact: the values are float32 ones
    mx[i] = static_cast<float>(hi[i]);
  }
}

void SyncedStatistics::reduce_min_max(std::vector<double>& mn, std::vector<double>& mx) const {
  if (!statistics_synced()) return;
  fold_min_max(*group_, mn, mx, "per-channel min / max", /*check_sizes=*/true);
}

void SyncedStatistics::reduce_min_max(Tensor& mn, Tensor& mx) const {
  if (!statistics_synced()) return;
  QGRAD_CHECK(mn.defined() && mx.defined() && mn.shape() == mx.shape() && is_floating(mn.dtype()) &&
                  mn.dtype() == mx.dtype(),
              ValueError,
              "synchronised statistics: reduce_min_max needs two floating tensors of "
              "one shape and dtype");
  NoGradGuard no_grad;
  // Folded on the host: the collective stages device tensors through it anyway, and the values
  // (one per tensor or channel) are few. float64 holds every floating value exactly.
  std::vector<double> lo = mn.to(kCPU).to(kFloat64).contiguous().to_vector<double>();
  std::vector<double> hi = mx.to(kCPU).to(kFloat64).contiguous().to_vector<double>();
  fold_min_max(*group_, lo, hi, "min / max tensors", /*check_sizes=*/true);
  const Shape shape = mn.shape();
  mn.copy_(from_vector<double>(lo, shape).to(mn.dtype()).to(mn.device()));
  mx.copy_(from_vector<double>(hi, shape).to(mx.dtype()).to(mx.device()));
}

void SyncedStatistics::reduce_sum(std::vector<std::int64_t>& v) const {
  if (!statistics_synced()) return;
  const std::vector<std::vector<std::int64_t>> all = gather(*group_, v, "counts", true);
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::int64_t s = 0;
    for (const auto& part : all) s += part[i];
    v[i] = s;
  }
}

void SyncedStatistics::reduce_sum(std::vector<double>& v) const {
  if (!statistics_synced()) return;
  const std::vector<std::vector<double>> all = gather(*group_, v, "sums", true);
  for (std::size_t i = 0; i < v.size(); ++i) {
    double s = all[0][i];
    for (std::size_t r = 1; r < all.size(); ++r) s += all[r][i];
    v[i] = s;
  }
}

bool SyncedStatistics::any_rank(bool flag) const {
  if (!statistics_synced()) return flag;
  NoGradGuard no_grad;
  Tensor t = from_vector<std::int32_t>({flag ? 1 : 0}, {1});
  group_->all_reduce(t, distributed::ReduceOp::Max);
  return t.to_vector<std::int32_t>()[0] != 0;
}

}  // namespace qgrad::quant
