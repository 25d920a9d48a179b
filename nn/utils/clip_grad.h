// Gradient clipping by total norm, as torch.nn.utils.clip_grad_norm_ (torch 1.13 semantics):
// the norm of all gradients taken together, every gradient scaled in place by
// min(1, max_norm / (total_norm + 1e-6)), and the total norm returned.
#pragma once

#include <limits>
#include <vector>

#include "core/tensor.h"

namespace qgrad::nn::utils {

// norm_type: any p > 0, or std::numeric_limits<double>::infinity() for the max norm. Parameters
// without a gradient are skipped; with none at all the result is 0. The total norm and the
// scale are rounded to the first gradient's dtype as in PyTorch. With error_if_nonfinite a NaN
// or infinite total norm throws ValueError before any gradient is touched.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm,
                       double norm_type = 2.0, bool error_if_nonfinite = false);
double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

}  // namespace qgrad::nn::utils
