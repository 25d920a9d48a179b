// Model zoo: layer-by-layer construction of lenet5bn and vggfm, and lookup by name (the ResNets
// and MobileNetV2 are in resnet.cpp and mobilenet_v2.cpp).
// Layers are created in forward order, so the Generator is consumed in that order.
#include "nn/models/zoo.h"

#include "core/error.h"
#include "nn/modules/activation.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"
#include "nn/modules/flatten.h"
#include "nn/modules/linear.h"
#include "nn/modules/pooling.h"

namespace qgrad::nn {

namespace {

// Conv (no bias) - BN - ReLU appended to `seq`.
void conv_bn_relu(Sequential& seq, std::int64_t in, std::int64_t out, std::int64_t kernel,
                  std::int64_t padding, Generator& gen) {
  seq.push_back(
      std::make_shared<Conv2d>(Conv2dOptions(in, out, kernel).padding(padding).bias(false), gen));
  seq.push_back(std::make_shared<BatchNorm2d>(out));
  seq.push_back(std::make_shared<ReLU>());
}

}  // namespace

std::shared_ptr<Sequential> lenet5bn(Generator& gen, const ImageShape& input,
                                     std::int64_t num_classes) {
  check_image_shape("lenet5bn", input, num_classes, 16);
  const auto side = [](std::int64_t s) { return ((s - 4) / 2 - 4) / 2; };
  auto m = std::make_shared<Sequential>();
  conv_bn_relu(*m, input.channels, 6, 5, 0, gen);
  m->push_back(std::make_shared<MaxPool2d>(2));
  conv_bn_relu(*m, 6, 16, 5, 0, gen);
  m->push_back(std::make_shared<MaxPool2d>(2));
  m->push_back(std::make_shared<Flatten>());
  m->push_back(std::make_shared<Linear>(16 * side(input.height) * side(input.width), 120, gen));
  m->push_back(std::make_shared<ReLU>());
  m->push_back(std::make_shared<Linear>(120, 84, gen));
  m->push_back(std::make_shared<ReLU>());
  m->push_back(std::make_shared<Linear>(84, num_classes, gen));
  return m;
}

std::shared_ptr<Sequential> vggfm(Generator& gen, const ImageShape& input,
                                  std::int64_t num_classes) {
  check_image_shape("vggfm", input, num_classes, 4);
  auto m = std::make_shared<Sequential>();
  conv_bn_relu(*m, input.channels, 32, 3, 1, gen);
  conv_bn_relu(*m, 32, 32, 3, 1, gen);
  m->push_back(std::make_shared<MaxPool2d>(2));
  conv_bn_relu(*m, 32, 64, 3, 1, gen);
  conv_bn_relu(*m, 64, 64, 3, 1, gen);
  m->push_back(std::make_shared<MaxPool2d>(2));
  m->push_back(std::make_shared<Flatten>());
  m->push_back(std::make_shared<Linear>(64 * (input.height / 4) * (input.width / 4), 128, gen));
  m->push_back(std::make_shared<ReLU>());
  m->push_back(std::make_shared<Linear>(128, num_classes, gen));
  return m;
}

std::vector<std::string> model_names() {
  return {"lenet5bn", "vggfm",          "resnet20",     "resnet32",          "resnet56",
          "resnet18", "resnet18_cifar", "mobilenet_v2", "mobilenet_v2_cifar"};
}

std::shared_ptr<UnaryModule> make_model(const std::string& name, std::uint64_t seed,
                                        const ImageShape& input, std::int64_t num_classes) {
  Generator gen(seed);
  if (name == "lenet5bn") return lenet5bn(gen, input, num_classes);
  if (name == "vggfm") return vggfm(gen, input, num_classes);
  if (name == "resnet20") return resnet20(gen, input, num_classes);
  if (name == "resnet32") return cifar_resnet(gen, 32, input, num_classes);
  if (name == "resnet56") return cifar_resnet(gen, 56, input, num_classes);
  if (name == "resnet18") return resnet18(gen, ResNetStem::ImageNet, input, num_classes);
  if (name == "resnet18_cifar") return resnet18(gen, ResNetStem::Cifar, input, num_classes);
  if (name == "mobilenet_v2") return mobilenet_v2(gen, input, num_classes);
  if (name == "mobilenet_v2_cifar") {
    MobileNetV2Options o;
    o.cifar = true;
    return mobilenet_v2(gen, input, num_classes, o);
  }
  std::string valid;
  for (const auto& n : model_names()) valid += (valid.empty() ? "" : ", ") + n;
  throw ValueError("make_model: unknown model '" + name + "'; valid names: " + valid);
}

}  // namespace qgrad::nn
