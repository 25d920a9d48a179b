// BnAffine: a batch norm in inference as a per-channel affine map y = x * k + c, with
// k = gamma / sqrt(running_var + eps) and c = beta - running_mean * k, computed in double from the
// module's running statistics. The deployment back ends fold it into what comes before it: the
// ONNX exporter into a float Conv's weight and bias, int8 inference into a quantized
// convolution's per-channel output scales and bias. A batch norm without running statistics, or
// with a non-finite k, is a ValueError naming the back end (`op`) and the layer (`where`).
#pragma once

#include <string>
#include <vector>

#include "nn/modules/batchnorm.h"

namespace qgrad::deploy {

struct BnAffine {
  std::vector<double> k, c;
};

BnAffine bn_affine(const nn::BatchNormBase& bn, const std::string& op, const std::string& where);

}  // namespace qgrad::deploy
