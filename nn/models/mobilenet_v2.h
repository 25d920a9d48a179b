/// @file
/// MobileNetV2 (Sandler et al. 2018) with torchvision's structure and module names, so that its
/// state_dict keys equal torchvision.models.mobilenet_v2()'s:
///
///   features    "0": conv 3x3 stride 2 (32 x width channels) - BN - ReLU6; "1".."17": the
///               InvertedResidual blocks of the table below (expand ratio t, channels c x width,
///               n blocks, the first of each group with stride s); "18": conv 1x1 to
///               max(1, width) x 1280 channels - BN - ReLU6
///   avgpool     global average pool (torchvision's functional adaptive_avg_pool2d)
///   flatten     (torchvision's functional torch.flatten)
///   classifier  "0": Dropout(0.2), "1": Linear(last channels -> classes)
///
///     t  c    n  s          Channel counts are rounded by make_divisible(c x width, 8); the
///     1  16   1  1          depthwise convolutions are grouped with groups == channels.
///     6  24   2  2 (1)
///     6  32   3  2
///     6  64   4  2
///     6  96   3  1
///     6  160  3  2
///     6  320  1  1
///
/// The CIFAR variant (MobileNetV2Options::cifar) keeps every layer and name but gives the first
/// convolution and the t=6, c=24 group stride 1 (the (1) above), the usual adaptation for 32x32
/// images (as in kuangliu/pytorch-cifar): the network downsamples by 8 instead of 32, so a 32x32
/// image reaches the last convolution at 4x4 rather than 1x1.
///
/// Weights take PyTorch's default layer initialisation drawn from the Generator in forward order
/// (torchvision re-initialises: kaiming_normal_(fan_out) convolutions, normal(0, 0.01) Linear;
/// load a state_dict for that).
#pragma once

#include <cstdint>
#include <memory>

#include "core/generator.h"
#include "nn/models/image_shape.h"
#include "nn/modules/sequential.h"

namespace qgrad::nn {

/// torchvision's _make_divisible: `v` rounded to the nearest multiple of `divisor` (halves up),
/// at least `min_value` (`divisor` when 0), and one `divisor` more when that lost over 10% of v.
std::int64_t make_divisible(double v, std::int64_t divisor, std::int64_t min_value = 0);

/// The options of mobilenet_v2.
struct MobileNetV2Options {
  double width_mult = 1.0;  ///< channel multiplier (torchvision's width_mult), > 0
  bool cifar = false;       ///< stride 1 in the first convolution and the c=24 group
  double dropout = 0.2;     ///< the classifier's dropout probability
};

/// MobileNetV2 (see the file comment) for `input` images and `num_classes` classes, initialised
/// from `gen`. ValueError for a non-positive width or a bad shape.
std::shared_ptr<Sequential> mobilenet_v2(Generator& gen, const ImageShape& input = {},
                                         std::int64_t num_classes = 10,
                                         const MobileNetV2Options& options = {});

}  // namespace qgrad::nn
