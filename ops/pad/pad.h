/// @file
/// pad: torch.nn.functional.pad, differentiable. Pads are listed from the last dim backwards as
/// (left, right) pairs; negative pads crop. Modes: "constant" (fill with `value`), "reflect"
/// (mirror without repeating the edge), "replicate" (repeat the edge) and "circular" (wrap around;
/// with a negative pad the cropped tensor wraps, as PyTorch).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace qgrad {

/// pads = {last_left, last_right, second_last_left, second_last_right, ...}, at most 2 * x.dim()
/// values. Every dtype pads in "constant" mode; gradients flow for floating inputs.
Tensor pad(const Tensor& x, const std::vector<std::int64_t>& pads,
           const std::string& mode = "constant", double value = 0.0);

}  // namespace qgrad
