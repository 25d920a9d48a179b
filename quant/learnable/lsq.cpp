// LSQ and LSQ+: argument checks, dispatch through the "learnable.lsq_*" kernel tables and backward
// rules (unreduced parameter gradients summed to the parameter shapes).
#include "quant/learnable/lsq.h"

#include <cmath>
#include <tuple>
#include <vector>

#include "core/autograd/function.h"
#include "core/factory.h"
#include "ops/device_check.h"
#include "ops/reduce/reduce.h"
#include "quant/learnable/lsq_kernels.h"
#include "quant/parameter_check_kernels.h"
#include "quant/synced_statistics.h"
#include "quant/torch_ao/qparam_checks.h"

namespace qgrad::learnable {

using ao::check_broadcast_param;

namespace {

Tensor apply(const char* op, const char* node, const Tensor& x, const Tensor& s, const Tensor& beta,
             double lo, double hi, double g) {
  static const KernelTable<LsqForwardKernel>& table = kernel_table(kLsqForwardKernels);
  static const KernelTable<quant::CheckParameterKernel>& checks =
      kernel_table(quant::kCheckParameterKernels);
  require_floating(op, "input", x);
  LsqForwardKernel& forward = table(op, x);
  check_broadcast_param(op, "s", s, x);
  // On a GPU kernels: the host does not wait for the parameters' values.
  if (beta.defined()) {
    check_broadcast_param(op, "beta", beta, x);
    checks(op, beta)(op, CheckedParameter::Beta, ParameterRule::Finite, beta.detach());
  }
  checks(op, s)(op, CheckedParameter::StepSize, ParameterRule::FiniteAndPositive, s.detach());
  QGRAD_CHECK(std::isfinite(g), ValueError, op, ": grad_scale must be finite, got ", g);
  Tensor y = empty(x.shape(), TensorOptions().dtype(x.dtype()).device(x.device()));
  const Tensor se = s.detach().expand(x.shape());
  const Tensor be = beta.defined() ? beta.detach().expand(x.shape()) : Tensor();
  forward(x, se, be, lo, hi, y);
  if (!needs_grad({x, s, beta})) return y;
  record(node, {x, s, beta}, {&y},
         [op, sx = SavedTensor(x), ss = SavedTensor(s), sb = SavedTensor(beta), lo, hi,
          g](const TensorList& grads) {
           static const KernelTable<LsqBackwardKernel>& backward =
               kernel_table(kLsqBackwardKernels);
           const Tensor xs = sx.get(), sv = ss.get(), bv = sb.get();
           const TensorOptions o = TensorOptions().dtype(xs.dtype()).device(xs.device());
           Tensor dx = empty(xs.shape(), o), ds = empty(xs.shape(), o);
           Tensor db = bv.defined() ? empty(xs.shape(), o) : Tensor();
           backward(op, grads[0])(grads[0], xs, sv.expand(xs.shape()),
                                  bv.defined() ? bv.expand(xs.shape()) : Tensor(), lo, hi, g, dx,
                                  ds, db);
           return TensorList{dx, sum_to_shape(ds, sv.shape()),
                             bv.defined() ? sum_to_shape(db, bv.shape()) : Tensor()};
         });
  return y;
}

}  // namespace

Tensor lsq_quantize(const Tensor& v, const Tensor& s, std::int64_t qn, std::int64_t qp,
                    double grad_scale) {
  const char* op = "lsq_quantize";
  QGRAD_CHECK(qn >= 0 && qp >= 1, ValueError, op, ": need Q_N >= 0 and Q_P >= 1, got Q_N ", qn,
              " Q_P ", qp);
  return apply(op, "LsqQuantizeBackward", v, s, Tensor(), -static_cast<double>(qn),
               static_cast<double>(qp), grad_scale);
}

double lsq_grad_scale(std::int64_t numel, std::int64_t qp) {
  QGRAD_CHECK(numel > 0 && qp > 0, ValueError, "lsq_grad_scale: numel and Q_P must be > 0, got ",
              numel, " and ", qp);
  return 1.0 / std::sqrt(static_cast<double>(numel) * static_cast<double>(qp));
}

namespace {
// The synchronised-statistics helpers for a free function's group.
struct GroupStatistics : quant::SyncedStatistics {
  explicit GroupStatistics(const std::shared_ptr<distributed::ProcessGroup>& g) {
    set_process_group(g);
  }
  using SyncedStatistics::any_rank;
  using SyncedStatistics::reduce_min_max;
  using SyncedStatistics::reduce_sum;
};
}  // namespace

double lsq_init_scale(const Tensor& v, std::int64_t qp,
                      const std::shared_ptr<distributed::ProcessGroup>& group) {
  static const KernelTable<LsqAbsSumKernel>& table = kernel_table(kLsqAbsSumKernels);
  const GroupStatistics sync(group);
  require_floating("lsq_init_scale", "input", v);
  QGRAD_CHECK(qp > 0, ValueError, "lsq_init_scale: need Q_P > 0, got ", qp);
  std::vector<double> sum_count{0.0, static_cast<double>(v.numel())};
  if (v.numel() > 0) sum_count[0] = table("lsq_init_scale", v)(v.detach());
  sync.reduce_sum(sum_count);  // the global batch's (a no-op without a group)
  QGRAD_CHECK(sum_count[1] > 0, ValueError,
              "lsq_init_scale: need a non-empty input, got 0 elements");
  return 2.0 * (sum_count[0] / sum_count[1]) / std::sqrt(static_cast<double>(qp));
}

Tensor lsq_plus_quantize(const Tensor& x, const Tensor& s, const Tensor& beta, std::int64_t n,
                         std::int64_t p, double grad_scale) {
  const char* op = "lsq_plus_quantize";
  QGRAD_CHECK(n < p, ValueError, op, ": need n < p, got n ", n, " p ", p);
  require_defined(op, "beta", beta);
  return apply(op, "LsqPlusQuantizeBackward", x, s, beta, static_cast<double>(n),
               static_cast<double>(p), grad_scale);
}

std::pair<double, double> lsq_plus_init_minmax(
    const Tensor& x, std::int64_t n, std::int64_t p,
    const std::shared_ptr<distributed::ProcessGroup>& group) {
  static const KernelTable<LsqMinMaxKernel>& table = kernel_table(kLsqMinMaxKernels);
  const GroupStatistics sync(group);
  require_floating("lsq_plus_init_minmax", "input", x);
  QGRAD_CHECK(n < p, ValueError, "lsq_plus_init_minmax: need n < p, got n ", n, " p ", p);
  // With a group every rank raises when one rank's part is empty (before the collective).
  const bool empty_here = x.numel() == 0;
  QGRAD_CHECK(!sync.any_rank(empty_here), ValueError,
              "lsq_plus_init_minmax: need a non-empty input, got ", x.numel(), " elements",
              empty_here ? "" : " here but an empty part on another rank");
  std::vector<double> lo_v(1), hi_v(1);
  std::tie(lo_v[0], hi_v[0]) = table("lsq_plus_init_minmax", x)(x.detach());
  sync.reduce_min_max(lo_v, hi_v);  // the global batch's (a no-op without a group)
  const double lo = lo_v[0], hi = hi_v[0];
  QGRAD_CHECK(std::isfinite(lo) && std::isfinite(hi) && hi > lo, ValueError,
              "lsq_plus_init_minmax: need finite data with max > min, got [", lo, ", ", hi, "]");
  const double s = (hi - lo) / static_cast<double>(p - n);
  return {s, lo - static_cast<double>(n) * s};
}

}  // namespace qgrad::learnable
