// Model zoo: layer-by-layer construction of lenet5bn, vggfm and resnet20, and lookup by name.
// Layers are created in forward order, so the Generator is consumed in that order.
#include "nn/models/zoo.h"

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

// Conv (no bias) - BN - ReLU appended to `seq`.
void conv_bn_relu(Sequential& seq, std::int64_t in, std::int64_t out, std::int64_t kernel,
                  std::int64_t padding, Generator& gen) {
  seq.push_back(
      std::make_shared<Conv2d>(Conv2dOptions(in, out, kernel).padding(padding).bias(false), gen));
  seq.push_back(std::make_shared<BatchNorm2d>(out));
  seq.push_back(std::make_shared<ReLU>());
}

// A ResNet stage: `blocks` BasicBlocks, the first with `stride`, named "0", "1", ...
std::shared_ptr<Sequential> resnet_stage(std::int64_t in, std::int64_t out, std::int64_t stride,
                                         int blocks, Generator& gen) {
  auto stage = std::make_shared<Sequential>();
  for (int b = 0; b < blocks; ++b)
    stage->push_back(
        std::make_shared<BasicBlock>(b == 0 ? in : out, out, b == 0 ? stride : 1, gen));
  return stage;
}

void check_shape(const char* model, const ImageShape& input, std::int64_t num_classes,
                 std::int64_t min_size) {
  QGRAD_CHECK(input.channels > 0 && num_classes > 0, ValueError, model, ": ", input.channels,
              " input channels and ", num_classes, " classes; both must be positive");
  QGRAD_CHECK(input.height >= min_size && input.width >= min_size, ValueError, model, ": a ",
              input.height, "x", input.width, " input is too small (at least ", min_size, "x",
              min_size, ")");
}

}  // namespace

std::shared_ptr<Sequential> lenet5bn(Generator& gen, const ImageShape& input,
                                     std::int64_t num_classes) {
  check_shape("lenet5bn", input, num_classes, 16);
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
  check_shape("vggfm", input, num_classes, 4);
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

std::shared_ptr<Sequential> resnet20(Generator& gen, const ImageShape& input,
                                     std::int64_t num_classes) {
  check_shape("resnet20", input, num_classes, 1);
  auto m = std::make_shared<Sequential>();
  m->push_back("conv1", std::make_shared<Conv2d>(
                            Conv2dOptions(input.channels, 16, 3).padding(1).bias(false), gen));
  m->push_back("bn1", std::make_shared<BatchNorm2d>(16));
  m->push_back("relu", std::make_shared<ReLU>());
  m->push_back("layer1", resnet_stage(16, 16, 1, 3, gen));
  m->push_back("layer2", resnet_stage(16, 32, 2, 3, gen));
  m->push_back("layer3", resnet_stage(32, 64, 2, 3, gen));
  m->push_back("avgpool", std::make_shared<AdaptiveAvgPool2d>(1));
  m->push_back("flatten", std::make_shared<Flatten>());
  m->push_back("fc", std::make_shared<Linear>(64, num_classes, gen));
  return m;
}

std::vector<std::string> model_names() {
  return {"lenet5bn", "vggfm", "resnet20"};
}

std::shared_ptr<UnaryModule> make_model(const std::string& name, std::uint64_t seed,
                                        const ImageShape& input, std::int64_t num_classes) {
  Generator gen(seed);
  if (name == "lenet5bn") return lenet5bn(gen, input, num_classes);
  if (name == "vggfm") return vggfm(gen, input, num_classes);
  if (name == "resnet20") return resnet20(gen, input, num_classes);
  std::string valid;
  for (const auto& n : model_names()) valid += (valid.empty() ? "" : ", ") + n;
  throw ValueError("make_model: unknown model '" + name + "'; valid names: " + valid);
}

}  // namespace qgrad::nn
