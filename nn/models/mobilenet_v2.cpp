// MobileNetV2: torchvision's layer table, built in forward order (so the Generator is consumed in
// that order).
#include "nn/models/mobilenet_v2.h"

#include <algorithm>

#include "core/error.h"
#include "nn/models/inverted_residual.h"
#include "nn/modules/dropout.h"
#include "nn/modules/flatten.h"
#include "nn/modules/linear.h"
#include "nn/modules/pooling.h"

namespace qgrad::nn {

std::int64_t make_divisible(double v, std::int64_t divisor, std::int64_t min_value) {
  if (min_value == 0) min_value = divisor;
  const auto rounded =
      static_cast<std::int64_t>(v + static_cast<double>(divisor) / 2) / divisor * divisor;
  std::int64_t out = std::max(min_value, rounded);
  if (static_cast<double>(out) < 0.9 * v) out += divisor;
  return out;
}

std::shared_ptr<Sequential> mobilenet_v2(Generator& gen, const ImageShape& input,
                                         std::int64_t num_classes,
                                         const MobileNetV2Options& options) {
  const char* name = options.cifar ? "mobilenet_v2_cifar" : "mobilenet_v2";
  check_image_shape(name, input, num_classes, 1);
  QGRAD_CHECK(options.width_mult > 0, ValueError, name, ": width_mult must be positive, got ",
              options.width_mult);
  struct Group {
    double t;
    std::int64_t c, n, s;
  };
  const Group table[] = {{1, 16, 1, 1}, {6, 24, 2, options.cifar ? 1 : 2},
                         {6, 32, 3, 2}, {6, 64, 4, 2},
                         {6, 96, 3, 1}, {6, 160, 3, 2},
                         {6, 320, 1, 1}};
  const double w = options.width_mult;
  std::int64_t channels = make_divisible(32 * w, 8);
  const std::int64_t last = make_divisible(1280 * std::max(1.0, w), 8);
  auto features = std::make_shared<Sequential>();
  features->push_back(conv_bn_relu6(input.channels, channels, 3, options.cifar ? 1 : 2, 1, gen));
  for (const Group& g : table) {
    const std::int64_t out = make_divisible(static_cast<double>(g.c) * w, 8);
    for (std::int64_t i = 0; i < g.n; ++i) {
      features->push_back(
          std::make_shared<InvertedResidual>(channels, out, i == 0 ? g.s : 1, g.t, gen));
      channels = out;
    }
  }
  features->push_back(conv_bn_relu6(channels, last, 1, 1, 1, gen));
  auto m = std::make_shared<Sequential>();
  m->push_back("features", features);
  m->push_back("avgpool", std::make_shared<AdaptiveAvgPool2d>(1));
  m->push_back("flatten", std::make_shared<Flatten>());
  auto classifier = std::make_shared<Sequential>();
  classifier->push_back(std::make_shared<Dropout>(options.dropout, gen));
  classifier->push_back(std::make_shared<Linear>(last, num_classes, gen));
  m->push_back("classifier", classifier);
  return m;
}

}  // namespace qgrad::nn
