// Helpers of the SyncBatchNorm tests on one rank (test_sync_batch_norm.cpp) and on several
// (mpi/test_mpi_sync_batch_norm.cpp): seeded affine parameters and a scaled error.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "nn/modules/batchnorm.h"
#include "ops/binary/binary.h"

namespace qgrad_test {

// Sets weight and bias of `bn` to seeded values (not 1 and 0, so their gradients matter).
inline void randomise_affine(const qgrad::nn::BatchNormBase& bn, std::uint64_t seed) {
  qgrad::Generator g(seed);
  qgrad::NoGradGuard no_grad;
  qgrad::Tensor w = bn.weight(), b = bn.bias();
  w.copy_(qgrad::rand(w.shape(), g) + 0.5);
  b.copy_(qgrad::randn(b.shape(), g));
}

// The largest |got - want| over the largest |want| (1 at least); infinity when the sizes differ.
inline double scaled_error(const qgrad::Tensor& got, const qgrad::Tensor& want) {
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  if (g.size() != w.size()) return std::numeric_limits<double>::infinity();
  double err = 0, scale = 1;
  for (std::size_t i = 0; i < g.size(); ++i) {
    err = std::max(err, std::abs(g[i] - w[i]));
    scale = std::max(scale, std::abs(w[i]));
  }
  return err / scale;
}

}  // namespace qgrad_test
