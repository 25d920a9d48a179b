// BnAffine from a batch norm's running statistics and affine parameters.
#include "deploy/common/bn_affine.h"

#include <cmath>

#include "core/error.h"

namespace qgrad::deploy {

BnAffine bn_affine(const nn::BatchNormBase& bn, const std::string& op, const std::string& where) {
  QGRAD_CHECK(bn.running_mean().defined() && bn.running_var().defined(), ValueError, op, ": ",
              where,
              " does not track running statistics (track_running_stats=False normalises with "
              "each batch's statistics, which inference cannot)");
  const std::vector<double> mean = bn.running_mean().to_vector<double>();
  const std::vector<double> var = bn.running_var().to_vector<double>();
  const std::size_t n = mean.size();
  const std::vector<double> gamma =
      bn.weight().defined() ? bn.weight().to_vector<double>() : std::vector<double>(n, 1.0);
  const std::vector<double> beta =
      bn.bias().defined() ? bn.bias().to_vector<double>() : std::vector<double>(n, 0.0);
  BnAffine a;
  for (std::size_t i = 0; i < n; ++i) {
    const double k = gamma[i] / std::sqrt(var[i] + bn.options().eps_);
    QGRAD_CHECK(std::isfinite(k), ValueError, op, ": ", where, ": channel ", i,
                " has a non-finite scale gamma / sqrt(var + eps)");
    a.k.push_back(k);
    a.c.push_back(beta[i] - mean[i] * k);
  }
  return a;
}

}  // namespace qgrad::deploy
