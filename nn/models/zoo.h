/// @file
/// The model zoo: reference networks for 1-channel 28x28 images (MNIST, Fashion-MNIST) with 10
/// classes, built from qgrad layers with PyTorch's default initialisation drawn from a
/// Generator (the same seed gives bit-identical models). Each is a Sequential whose module
/// names equal those of the equivalent torch.nn.Sequential, so state_dict keys map 1:1 to
/// PyTorch (tests/fixtures/gen_zoo.py holds the PyTorch twins):
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
/// Convolutions followed by batch norm have no bias.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/generator.h"
#include "nn/modules/sequential.h"

namespace qgrad::nn {

/// LeNet-5 with batch norm (see the file comment), initialised from `gen`.
std::shared_ptr<Sequential> lenet5bn(Generator& gen);
/// The VGG-style Fashion-MNIST network (see the file comment), initialised from `gen`.
std::shared_ptr<Sequential> vggfm(Generator& gen);
/// ResNet-20 for 32x32 inputs (see the file comment), initialised from `gen`.
std::shared_ptr<Sequential> resnet20(Generator& gen);

/// The names make_model accepts, in a fixed order.
std::vector<std::string> model_names();
/// The named model initialised from Generator(seed); throws ValueError listing the valid names
/// for an unknown one.
std::shared_ptr<UnaryModule> make_model(const std::string& name, std::uint64_t seed);

}  // namespace qgrad::nn
