/// @file
/// Reductions over any set of axes with keepdim, all differentiable: sum, mean, var (with
/// Bessel's correction), max/min along a dim (values and indices), amax/amin (gradient shared
/// among ties, as PyTorch), argmax/argmin.
#pragma once

#include <optional>
#include <utility>

#include "core/autograd/grad_arith.h"  // sum_to_shape, for the ops' backward rules
#include "core/tensor.h"

namespace qgrad {

/// dims empty = all dims.
Tensor sum(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
/// Mean over `dims` (empty = all dims).
Tensor mean(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
/// correction 1 = unbiased (torch.var default), 0 = population variance.
Tensor var(const Tensor& x, const Shape& dims = {}, std::int64_t correction = 1,
           bool keepdim = false);
/// Maximum over `dims` (empty = all dims).
Tensor amax(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
/// Minimum over `dims` (empty = all dims).
Tensor amin(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
/// Max/min over one dim: (values, int64 indices of the first extreme element).
std::pair<Tensor, Tensor> max(const Tensor& x, std::int64_t dim, bool keepdim = false);
/// Min over one dim: (values, int64 indices of the first minimal element).
std::pair<Tensor, Tensor> min(const Tensor& x, std::int64_t dim, bool keepdim = false);
/// Over all elements when dim is empty (index into the flattened tensor).
Tensor argmax(const Tensor& x, std::optional<std::int64_t> dim = std::nullopt,
              bool keepdim = false);
/// Index of the minimum (int64), over the flattened tensor when `dim` is not given.
Tensor argmin(const Tensor& x, std::optional<std::int64_t> dim = std::nullopt,
              bool keepdim = false);

}  // namespace qgrad
