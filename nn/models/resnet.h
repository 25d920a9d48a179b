/// @file
/// The ResNets of the zoo (He et al. 2016), Sequentials of BasicBlocks whose module names equal
/// the PyTorch models' (tests/fixtures/gen_zoo.py holds the twins), so state_dict keys map 1:1:
///
///   cifar_resnet  the CIFAR ResNet of depth 6n + 2 (20, 32, 44, 56, 110, ...): conv1 (3x3, 16) -
///                 bn1 - relu, layer1..layer3 (n BasicBlocks each, 16/32/64 channels, stride 2
///                 and a 1x1 conv+BN projection shortcut entering layers 2 and 3), avgpool
///                 (global), flatten, fc (64 -> classes). resnet20 is depth 20.
///   resnet18      torchvision's ResNet-18: conv1 - bn1 - relu - maxpool, layer1..layer4 (2
///                 BasicBlocks each, 64/128/256/512 channels, stride 2 and a projection shortcut
///                 entering layers 2..4), avgpool, flatten, fc (512 -> classes); the keys equal
///                 torchvision.models.resnet18()'s (its forward flattens functionally, here a
///                 Flatten module without parameters). The ImageNet stem is conv1 7x7 stride 2
///                 padding 3 and maxpool 3 / 2 / 1; the CIFAR stem (as in most CIFAR QAT papers)
///                 conv1 3x3 stride 1 padding 1 and no maxpool, so a 32x32 image reaches layer4 at
///                 4x4.
///
/// Weights take PyTorch's default layer initialisation drawn from the Generator in forward order
/// (torchvision re-initialises convolutions with kaiming_normal_(fan_out); load a state_dict for
/// that). Convolutions have no bias. Global pooling takes any image size.
#pragma once

#include <cstdint>
#include <memory>

#include "core/generator.h"
#include "nn/models/image_shape.h"
#include "nn/modules/sequential.h"

namespace qgrad::nn {

/// The CIFAR ResNet of `depth` = 6n + 2 layers (n >= 1; ValueError otherwise) for `input` images
/// and `num_classes` classes, initialised from `gen`.
std::shared_ptr<Sequential> cifar_resnet(Generator& gen, int depth, const ImageShape& input = {},
                                         std::int64_t num_classes = 10);
/// ResNet-20: cifar_resnet(gen, 20, input, num_classes).
std::shared_ptr<Sequential> resnet20(Generator& gen, const ImageShape& input = {},
                                     std::int64_t num_classes = 10);

/// The stem of resnet18.
enum class ResNetStem {
  ImageNet,  ///< conv1 7x7 stride 2 padding 3, bn1, relu, maxpool 3 stride 2 padding 1
  Cifar,     ///< conv1 3x3 stride 1 padding 1, bn1, relu (no maxpool)
};

/// ResNet-18 with `stem` for `input` images and `num_classes` classes, initialised from `gen`.
std::shared_ptr<Sequential> resnet18(Generator& gen, ResNetStem stem = ResNetStem::ImageNet,
                                     const ImageShape& input = {}, std::int64_t num_classes = 10);

}  // namespace qgrad::nn
