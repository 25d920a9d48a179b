/// @file
/// The model zoo: reference networks for 1-channel 28x28 images (MNIST, Fashion-MNIST) with 10
/// classes by default, and for other image shapes and class counts (3x32x32 CIFAR-10/100, 3x224x224
/// ImageNet) when given an ImageShape and a class count (the flatten size follows from the shape;
/// the defaults build exactly the models below, bit for bit). Built from qgrad layers with
/// PyTorch's default initialisation drawn from a Generator (the same seed gives bit-identical
/// models). Each is a Sequential whose module names equal those of the equivalent torch.nn model,
/// so state_dict keys map 1:1 to PyTorch (tests/fixtures/gen_zoo.py holds the PyTorch twins):
///
///   lenet5bn  LeNet-5 with batch norm: Conv(1->6,k5)-BN-ReLU-MaxPool2, Conv(6->16,k5)-BN-ReLU-
///             MaxPool2, Flatten(256), Linear(256->120)-ReLU, Linear(120->84)-ReLU,
///             Linear(84->10); children "0".."13".
///   vggfm     a small VGG: 2 x [Conv3x3-BN-ReLU x 2, MaxPool2] with 32 then 64 channels,
///             Flatten(3136), Linear(3136->128)-ReLU, Linear(128->10); children "0".."17".
///   resnet20, resnet32, resnet56
///             the CIFAR ResNets of He et al. (depth 6n + 2, cifar_resnet in resnet.h): conv1
///             (3x3, 16) - bn1 - relu, layer1..layer3 (n = 3, 5, 9 BasicBlocks each, 16/32/64
///             channels, stride 2 and a 1x1 conv+BN projection shortcut entering layers 2 and
///             3), avgpool (global), flatten, fc (64->10); children named as listed (keys
///             "layer2.0.downsample.0.weight"). 0.27M, 0.46M, 0.85M parameters (3 channels).
///   resnet18  torchvision's ResNet-18 (resnet.h) with the ImageNet stem (conv1 7x7 stride 2,
///             maxpool 3/2/1): conv1, bn1, relu, maxpool, layer1..layer4, avgpool, flatten, fc;
///             the state_dict keys equal torchvision's. 11.2M parameters (3 channels, 10
///             classes).
///   resnet18_cifar
///             the same with the CIFAR stem: conv1 3x3 stride 1, no maxpool.
///   mobilenet_v2
///             torchvision's MobileNetV2, width 1.0 (mobilenet_v2.h): features "0".."18"
///             (conv-BN-ReLU6 and InvertedResidual blocks with depthwise convolutions),
///             avgpool, flatten, classifier (Dropout(0.2), Linear); keys equal torchvision's.
///             2.2M parameters (10 classes).
///   mobilenet_v2_cifar
///             the same with stride 1 in the first convolution and the second block group
///             (downsampling by 8 instead of 32; mobilenet_v2.h). mobilenet_v2() takes other
///             widths.
///
/// For a C x H x W input with K classes the first convolution takes C channels, the last Linear
/// gives K outputs, lenet5bn flattens 16 x (((H-4)/2-4)/2) x (((W-4)/2-4)/2) (400 for 32x32) and
/// vggfm 64 x (H/4) x (W/4) (4096 for 32x32); the ResNets' and MobileNetV2's global pooling takes
/// any size.
///
/// Convolutions followed by batch norm have no bias.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/generator.h"
#include "nn/models/image_shape.h"
#include "nn/models/mobilenet_v2.h"
#include "nn/models/resnet.h"
#include "nn/modules/sequential.h"

namespace qgrad::nn {

/// LeNet-5 with batch norm (see the file comment) for `input` images and `num_classes` classes,
/// initialised from `gen`. ValueError when the image is smaller than 16x16.
std::shared_ptr<Sequential> lenet5bn(Generator& gen, const ImageShape& input = {},
                                     std::int64_t num_classes = 10);
/// The VGG-style Fashion-MNIST network (see the file comment), initialised from `gen`.
/// ValueError when the image is smaller than 4x4.
std::shared_ptr<Sequential> vggfm(Generator& gen, const ImageShape& input = {},
                                  std::int64_t num_classes = 10);
/// The names make_model accepts, in a fixed order.
std::vector<std::string> model_names();
/// The named model for `input` images and `num_classes` classes, initialised from
/// Generator(seed); throws ValueError listing the valid names for an unknown one, and ValueError
/// for a shape the model cannot take or a non-positive dimension or class count.
std::shared_ptr<UnaryModule> make_model(const std::string& name, std::uint64_t seed,
                                        const ImageShape& input = {},
                                        std::int64_t num_classes = 10);

}  // namespace qgrad::nn
