/// @file
/// Learned step size quantization from the papers:
/// LSQ (Esser et al., ICLR 2020): v_hat = rne(clip(v / s, -Q_N, Q_P)) * s with
///   dv = dy inside (-Q_N < v/s < Q_P), 0 when clipped;
///   ds = g * sum(dy * (rne(v/s) - v/s)) inside, g * sum(dy * -Q_N or Q_P) when clipped,
///   gradient scale g = 1 / sqrt(N * Q_P), initial step s = 2 * mean|v| / sqrt(Q_P).
/// LSQ+ (Bhalgat et al., CVPR-W 2020) adds a learnable offset beta:
///   x_hat = clamp(rne((x - beta) / s), n, p) * s + beta, dbeta = g * dy when clamped, 0 inside,
///   ds as LSQ with z = (x - beta) / s and the bounds n, p.
/// The step (and offset) broadcast against the input from the trailing dims (one element per
/// tensor, [C,1,1,1] per output channel, ...); their gradients are summed over the broadcast dims.
/// The initialisations take an optional process group: each rank passes its part of the global
/// batch and every rank gets the global batch's value. lsq_plus_init_minmax's is exact (min /
/// max); lsq_init_scale's mean is the ranks' float64 sums added in rank order over the global
/// count, which can differ from one process's sequential float64 sum in the last bits (a
/// relative difference of about numel * 2^-53).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "core/tensor.h"
#include "distributed/process_group.h"

namespace qgrad::learnable {

/// qn >= 0, qp >= 1 (e.g. signed b bits: qn = 2^(b-1), qp = 2^(b-1) - 1; unsigned: 0, 2^b - 1).
Tensor lsq_quantize(const Tensor& v, const Tensor& s, std::int64_t qn, std::int64_t qp,
                    double grad_scale = 1.0);
/// 1 / sqrt(numel * qp).
double lsq_grad_scale(std::int64_t numel, std::int64_t qp);
/// 2 * mean(|v|) / sqrt(qp); with a group, over the ranks' global batch (see the file comment).
double lsq_init_scale(const Tensor& v, std::int64_t qp,
                      const std::shared_ptr<distributed::ProcessGroup>& group = nullptr);

/// n < p (integers of the grid, e.g. -128 and 127, or 0 and 255).
Tensor lsq_plus_quantize(const Tensor& x, const Tensor& s, const Tensor& beta, std::int64_t n,
                         std::int64_t p, double grad_scale = 1.0);
/// Min/max initialisation of LSQ+ for activations: s = (max - min) / (p - n), beta = min - n * s.
/// With a group: over the ranks' global batch (see the file comment).
std::pair<double, double> lsq_plus_init_minmax(
    const Tensor& x, std::int64_t n, std::int64_t p,
    const std::shared_ptr<distributed::ProcessGroup>& group = nullptr);

}  // namespace qgrad::learnable
