/// @file
/// The model zoo: reference networks for 1-channel 28x28 images (MNIST, Fashion-MNIST) with 10
/// classes by default, and for other image shapes and class counts (3x32x32 CIFAR-10/100) when
/// given an ImageShape and a class count (the flatten size follows from the shape; the defaults
/// build exactly the models below, bit for bit). Built from qgrad layers with PyTorch's default
/// initialisation drawn from a Generator (the same seed gives bit-identical models). Each is a
/// Sequential whose module names equal those of the equivalent torch.nn.Sequential, so state_dict
/// keys map 1:1 to PyTorch (tests/fixtures/gen_zoo.py holds the PyTorch twins):
///
///   lenet5bn  LeNet-5 with batch norm: Conv(1->6,k5)-BN-ReLU-MaxPool2, Conv(6->16,k5)-BN-ReLU-
///             MaxPool2, Flatten(256), Linear(256->120)-ReLU, Linear(120->84)-ReLU,
///             Linear(84->10); children "0".."13".
///   vggfm     a small VGG: 2 x [Conv3x3-BN-ReLU x 2, MaxPool2] with 32 then 64 channels,
///             Flatten(3136), Linear(3136->128)-ReLU, Linear(128->10); children "0".."17".
///   resnet20  the CIFAR ResNet-20 of He et al. on 1-channel input: conv1 (3x3, 16) - bn1 -
///             relu, layer1..layer3 (3 BasicBlocks each, 16/32/64 channels, stride 2 and a 1x1
///             conv+BN projection shortcut entering layers 2 and 3), avgpool (global), flatten,
///             fc (64->10); children named as listed (keys "layer2.0.downsample.0.weight").
///
/// For a C x H x W input with K classes the first convolution takes C channels, the last Linear
/// gives K outputs, lenet5bn flattens 16 x (((H-4)/2-4)/2) x (((W-4)/2-4)/2) (400 for 32x32) and
/// vggfm 64 x (H/4) x (W/4) (4096 for 32x32); resnet20's global pooling takes any size.
///
/// Convolutions followed by batch norm have no bias.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/generator.h"
#include "nn/modules/sequential.h"

namespace qgrad::nn {

/// The shape of one input image, channels x height x width.
struct ImageShape {
  std::int64_t channels = 1;  ///< input channels (1 grey, 3 RGB)
  std::int64_t height = 28;   ///< rows
  std::int64_t width = 28;    ///< columns
};

/// LeNet-5 with batch norm (see the file comment) for `input` images and `num_classes` classes,
/// initialised from `gen`. ValueError when the image is smaller than 16x16.
std::shared_ptr<Sequential> lenet5bn(Generator& gen, const ImageShape& input = {},
                                     std::int64_t num_classes = 10);
/// The VGG-style Fashion-MNIST network (see the file comment), initialised from `gen`.
/// ValueError when the image is smaller than 4x4.
std::shared_ptr<Sequential> vggfm(Generator& gen, const ImageShape& input = {},
                                  std::int64_t num_classes = 10);
/// ResNet-20 (see the file comment), initialised from `gen`.
std::shared_ptr<Sequential> resnet20(Generator& gen, const ImageShape& input = {},
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
