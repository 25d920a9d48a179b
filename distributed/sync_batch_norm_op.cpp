// sync_batch_norm: the global statistics from one all_gather, the output through batch_norm's
// evaluation kernel with those statistics, the running statistics through its update kernel,
// and the backward rule with the all-reduced sums.
//
// Accuracy: each rank sums its values and their squared deviations from its own (rounded) mean
// per channel, as batch_norm's kernel does about the batch mean; the sums travel in float64 and
// are combined in float64 (a shifted-data form of Chan et al.'s pairwise update, exact in real
// arithmetic), so the global mean and variance are as accurate as one process's batch_norm on
// the whole batch, though not always the same last bit.
#include "distributed/sync_batch_norm_op.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/autograd/function.h"
#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "ops/batch_norm/batch_norm.h"
#include "ops/batch_norm/batch_norm_kernels.h"
#include "ops/binary/binary.h"
#include "ops/device_check.h"
#include "ops/reduce/reduce.h"

namespace qgrad::distributed {

namespace {

constexpr const char* kOp = "sync_batch_norm";

// Per-channel host values as a [C] tensor of `like`'s dtype and device (rounded to nearest).
Tensor channel_tensor(const std::vector<double>& v, const Tensor& like) {
  return from_vector<double>(v).to(like.dtype()).to(like.device());
}

// The global statistics of one channel set, in float64 on the host.
struct GlobalStats {
  double count = 0;
  std::vector<double> mean, var;  // var: biased (divided by count)
};

// This rank's [3C + 1] float64 summary: per channel the sum of x, the centre p (its own
// rounded mean) and the sum of (x - p)^2, then the count of values per channel.
Tensor local_summary(const Tensor& xc) {
  const std::int64_t c = xc.size(1);
  const std::int64_t count = xc.size(0) * xc.size(2);
  const TensorOptions f64 = TensorOptions().dtype(kFloat64).device(xc.device());
  Tensor out = zeros({3 * c + 1}, f64);
  out.narrow(0, 3 * c, 1).fill_(static_cast<double>(count));
  if (count == 0) return out;  // an empty share: zeros, and p = 0
  const Tensor s1 = sum(xc, {0, 2});
  // The centre in x's dtype, so the deviations are computed as batch_norm's kernel does.
  const Tensor p = (s1.to(kFloat64) / static_cast<double>(count)).to(xc.dtype());
  const Tensor d = xc - p.view({1, c, 1});
  out.narrow(0, 0, c).copy_(s1);
  out.narrow(0, c, c).copy_(p);
  out.narrow(0, 2 * c, c).copy_(sum(d * d, {0, 2}));
  return out;
}

// Combines the ranks' summaries in rank order: the same arithmetic, so the same bits, on every
// rank. Over rank r's values, sum (x - mean)^2 = S2_r + (p_r - mean) * (2 (S1_r - n_r p_r) +
// n_r (p_r - mean)), with S2_r the squared deviations from its centre p_r.
GlobalStats combine(const std::vector<Tensor>& parts, std::int64_t c) {
  std::vector<std::vector<double>> host;
  host.reserve(parts.size());
  GlobalStats g;
  std::vector<double> s1(static_cast<std::size_t>(c), 0.0);
  for (const Tensor& part : parts) {
    host.push_back(part.to_vector<double>());
    g.count += host.back()[static_cast<std::size_t>(3 * c)];
    for (std::int64_t k = 0; k < c; ++k) s1[k] += host.back()[k];
  }
  g.mean.resize(static_cast<std::size_t>(c));
  g.var.resize(static_cast<std::size_t>(c));
  for (std::int64_t k = 0; k < c; ++k) {
    const double mean = s1[k] / g.count;
    double m2 = 0;
    for (const std::vector<double>& h : host) {
      const double n = h[3 * c], s = h[k], p = h[c + k], s2 = h[2 * c + k];
      m2 += s2 + (p - mean) * (2 * (s - n * p) + n * (p - mean));
    }
    g.mean[k] = mean;
    g.var[k] = std::max(0.0, m2 / g.count);  // rounding must not make it negative
  }
  return g;
}

}  // namespace

Tensor sync_batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, double momentum, double eps,
                       const std::shared_ptr<ProcessGroup>& group) {
  QGRAD_CHECK(group != nullptr, ValueError, kOp, ": the process group is null");
  require_defined(kOp, "input", x);
  check_batch_norm_args(kOp, x, running_mean, running_var, weight, bias, momentum, eps);

  const std::int64_t n = x.size(0), c = x.size(1);
  std::int64_t l = 1;
  for (std::int64_t d = 2; d < x.dim(); ++d) l *= x.size(d);
  const Tensor xc = x.detach().contiguous().view({n, c, l});

  GlobalStats stats;
  {
    NoGradGuard no_grad;
    stats = combine(group->all_gather(local_summary(xc)), c);
  }
  // Every rank sees the same count, so every rank throws here together.
  QGRAD_CHECK(stats.count > 1, ValueError, kOp,
              ": expected more than 1 value per channel over all ranks when training, got ",
              stats.count, " (input shape ", x.shape(), " on rank ", group->rank(), " of ",
              group->size(), ")");
  const Tensor mean = channel_tensor(stats.mean, x);
  const Tensor var = channel_tensor(stats.var, x);
  std::vector<double> invstd(static_cast<std::size_t>(c));
  for (std::int64_t k = 0; k < c; ++k) invstd[k] = 1.0 / std::sqrt(stats.var[k] + eps);

  Tensor y;
  {
    // batch_norm's evaluation path normalises with given statistics: y = (x - mean) *
    // (weight / sqrt(var + eps)) + bias, the training kernel's formula.
    NoGradGuard no_grad;
    y = batch_norm(x.detach(), mean, var, weight.defined() ? weight.detach() : Tensor(),
                   bias.defined() ? bias.detach() : Tensor(), /*training=*/false, 0.0, eps);
    if (running_mean.defined()) {
      // batch_norm's own update (the unbiased variance with the global count), so the running
      // statistics follow BatchNorm2d's formula exactly.
      static const KernelTable<BatchNormUpdateRunningKernel>& update =
          kernel_table(kBatchNormUpdateRunningKernels);
      update(kOp, running_mean)(running_mean, running_var, mean, var, momentum,
                                static_cast<std::int64_t>(stats.count));
      running_mean.bump_version();
      running_var.bump_version();
    }
  }

  if (needs_grad({x, weight, bias})) {
    const bool want_x = x.requires_grad();
    const bool want_w = weight.defined() && weight.requires_grad();
    const bool want_b = bias.defined() && bias.requires_grad();
    const Shape x_shape = x.shape();
    const Tensor w = weight.defined() ? weight.detach().contiguous() : Tensor();
    const Tensor invstd64 = from_vector<double>(invstd).to(x.device());
    record("SyncBatchNormBackward", {x, weight, bias}, {&y},
           [sx = SavedTensor(xc), sw = SavedTensor(w), mean, invstd64, count = stats.count, group,
            want_x, want_w, want_b, x_shape](const TensorList& g) {
             const Tensor xs = sx.get();
             const std::int64_t c = xs.size(1);
             const DType dt = xs.dtype();
             const Tensor gy = g[0].contiguous().view(xs.shape());
             const Tensor xmu = xs - mean.view({1, c, 1});
             // This rank's sums (accumulated in double by the reduction, rounded once to x's
             // dtype), then float64.
             const Tensor sum_dy = sum(gy, {0, 2}).to(kFloat64);
             const Tensor sum_dy_xmu = sum(gy * xmu, {0, 2}).to(kFloat64);
             // The parameters' gradients are this rank's (PyTorch's grad_weight / grad_bias).
             const Tensor gw = want_w ? (sum_dy_xmu * invstd64).to(dt) : Tensor();
             const Tensor gb = want_b ? sum_dy.to(dt) : Tensor();
             Tensor gx;
             if (want_x) {
               // The global statistics depend on every rank's x: their gradient needs the sums
               // over the global batch.
               Tensor sums = empty({2, c}, TensorOptions().dtype(kFloat64).device(xs.device()));
               sums.select(0, 0).copy_(sum_dy);
               sums.select(0, 1).copy_(sum_dy_xmu);
               group->all_reduce(sums, ReduceOp::Sum);
               // batch_norm's backward formula with the global sums and count:
               // gx = (dy - mean(dy) - (x - mean) * k) * invstd * w, k = mean(dy (x - mean)) /
               // (var + eps).
               const Tensor gmean = (sums.select(0, 0) / count).to(dt);
               const Tensor k = (sums.select(0, 1) / count * invstd64 * invstd64).to(dt);
               Tensor scale = invstd64.to(dt);
               if (sw.defined()) scale = scale * sw.get();
               gx = (gy - gmean.view({1, c, 1}) - xmu * k.view({1, c, 1})) * scale.view({1, c, 1});
               gx = gx.view(x_shape);
             }
             return TensorList{gx, gw, gb};
           });
  }
  return y;
}

}  // namespace qgrad::distributed
