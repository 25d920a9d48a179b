/// @file
/// Gradient clipping by total norm, as torch.nn.utils.clip_grad_norm_ (torch 1.13 semantics):
/// the norm of all gradients taken together, every gradient scaled in place by
/// min(1, max_norm / (total_norm + 1e-6)), and the total norm returned: as a double (libtorch's
/// C++ form, which waits for the device to read it) or as a 0-d tensor on the gradients' device
/// (Python's form, which does not, so a GPU training step can clip without the host waiting).
#pragma once

#include <limits>
#include <vector>

#include "core/tensor.h"

namespace qgrad::nn::utils {

/// norm_type: any p > 0, or std::numeric_limits<double>::infinity() for the max norm. Parameters
/// without a gradient are skipped; with none at all the result is 0. The total norm and the
/// scale are rounded to the first gradient's dtype as in PyTorch. With error_if_nonfinite a NaN
/// or infinite total norm throws ValueError before any gradient is touched.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm,
                       double norm_type = 2.0, bool error_if_nonfinite = false);
/// clip_grad_norm_ for one parameter.
double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

/// The same clipping, the total norm returned as a 0-d tensor of the first gradient's dtype on its
/// device (a float32 0 on the CPU when no parameter has a gradient, as torch's tensor(0.)). Only
/// error_if_nonfinite reads the norm on the host, as torch's check does. Gradients on several
/// devices are allowed; their norms travel to the first gradient's device.
Tensor clip_grad_norm_tensor_(const std::vector<Tensor>& parameters, double max_norm,
                              double norm_type = 2.0, bool error_if_nonfinite = false);

}  // namespace qgrad::nn::utils
