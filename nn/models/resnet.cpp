// The zoo's ResNets: the CIFAR ResNet of depth 6n + 2 and ResNet-18 with either stem, built
// layer by layer in forward order (so the Generator is consumed in that order).
#include "nn/models/resnet.h"

#include <string>

#include "core/error.h"
#include "nn/models/basic_block.h"
#include "nn/modules/activation.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"
#include "nn/modules/flatten.h"
#include "nn/modules/linear.h"
#include "nn/modules/pooling.h"

namespace qgrad::nn {

namespace {

// A ResNet stage: `blocks` BasicBlocks, the first with `stride`, named "0", "1", ...
std::shared_ptr<Sequential> resnet_stage(std::int64_t in, std::int64_t out, std::int64_t stride,
                                         int blocks, Generator& gen) {
  auto stage = std::make_shared<Sequential>();
  for (int b = 0; b < blocks; ++b)
    stage->push_back(
        std::make_shared<BasicBlock>(b == 0 ? in : out, out, b == 0 ? stride : 1, gen));
  return stage;
}

// conv1 - bn1 - relu.
void stem(Sequential& m, const Conv2dOptions& conv, Generator& gen) {
  m.push_back("conv1", std::make_shared<Conv2d>(conv, gen));
  m.push_back("bn1", std::make_shared<BatchNorm2d>(conv.out_channels_));
  m.push_back("relu", std::make_shared<ReLU>());
}

// avgpool (global) - flatten - fc.
void head(Sequential& m, std::int64_t features, std::int64_t num_classes, Generator& gen) {
  m.push_back("avgpool", std::make_shared<AdaptiveAvgPool2d>(1));
  m.push_back("flatten", std::make_shared<Flatten>());
  m.push_back("fc", std::make_shared<Linear>(features, num_classes, gen));
}

}  // namespace

std::shared_ptr<Sequential> cifar_resnet(Generator& gen, int depth, const ImageShape& input,
                                         std::int64_t num_classes) {
  QGRAD_CHECK(depth >= 8 && (depth - 2) % 6 == 0, ValueError, "cifar_resnet: depth ", depth,
              " is not 6n + 2 with n >= 1 (20, 32, 44, 56, 110, ...)");
  const std::string name = "resnet" + std::to_string(depth);
  check_image_shape(name.c_str(), input, num_classes, 1);
  const int n = (depth - 2) / 6;
  auto m = std::make_shared<Sequential>();
  stem(*m, Conv2dOptions(input.channels, 16, 3).padding(1).bias(false), gen);
  m->push_back("layer1", resnet_stage(16, 16, 1, n, gen));
  m->push_back("layer2", resnet_stage(16, 32, 2, n, gen));
  m->push_back("layer3", resnet_stage(32, 64, 2, n, gen));
  head(*m, 64, num_classes, gen);
  return m;
}

std::shared_ptr<Sequential> resnet20(Generator& gen, const ImageShape& input,
                                     std::int64_t num_classes) {
  return cifar_resnet(gen, 20, input, num_classes);
}

std::shared_ptr<Sequential> resnet18(Generator& gen, ResNetStem stem_kind, const ImageShape& input,
                                     std::int64_t num_classes) {
  const bool imagenet = stem_kind == ResNetStem::ImageNet;
  check_image_shape(imagenet ? "resnet18" : "resnet18_cifar", input, num_classes, 1);
  auto m = std::make_shared<Sequential>();
  if (imagenet) {
    stem(*m, Conv2dOptions(input.channels, 64, 7).stride(2).padding(3).bias(false), gen);
    m->push_back("maxpool", std::make_shared<MaxPool2d>(MaxPool2dOptions(3).stride(2).padding(1)));
  } else {
    stem(*m, Conv2dOptions(input.channels, 64, 3).padding(1).bias(false), gen);
  }
  m->push_back("layer1", resnet_stage(64, 64, 1, 2, gen));
  m->push_back("layer2", resnet_stage(64, 128, 2, 2, gen));
  m->push_back("layer3", resnet_stage(128, 256, 2, 2, gen));
  m->push_back("layer4", resnet_stage(256, 512, 2, 2, gen));
  head(*m, 512, num_classes, gen);
  return m;
}

}  // namespace qgrad::nn
