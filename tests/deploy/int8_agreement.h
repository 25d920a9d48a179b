// The agreement of a QAT model's int8 form (quant::convert) with its fake-quantized forward on
// seeded random inputs, for the int8 tests: top-1 agreement and the largest logit difference in
// units of the logits' 8-bit step max|logit| / 127. Also checks that every int8 layer reports the
// oneDNN implementation it ran.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "deploy/int8/convert.h"
#include "nn/models/image_shape.h"
#include "nn/unary_module.h"
#include "quant/modules/frozen_quantizer_statistics.h"

namespace qgrad_test {

using namespace qgrad;

struct Agreement {
  double top1 = 0;       // fraction of rows with the same argmax
  double max_steps = 0;  // max |int8 - fake quant| in units of max|fake quant| / 127
  double off = 0;        // fraction of logits more than half such a step apart
  std::size_t layers = 0;
};

inline Agreement agreement(nn::UnaryModule& model, std::int64_t n, std::uint64_t seed,
                           const quant::ConvertOptions& options = quant::ConvertOptions(),
                           const nn::ImageShape& input = {}) {
  Generator gen(seed);
  const Tensor x = randn({n, input.channels, input.height, input.width}, gen);
  NoGradGuard no_grad;
  model.eval();
  Tensor fq;
  {
    quant::FrozenQuantizerStatistics frozen(model);
    fq = model.forward(x);
  }
  quant::Int8Model int8 = quant::convert(model, options);
  const Tensor q = int8.forward(x);
  REQUIRE(q.shape() == fq.shape());
  REQUIRE(q.dtype() == DType::Float32);
  for (const auto& info : int8.implementations()) {
    INFO(info.layer);
    CHECK(!info.impl.empty());
  }
  const std::vector<float> a = fq.to_vector<float>(), b = q.to_vector<float>();
  const std::int64_t c = fq.size(1);
  double max_abs = 0, max_diff = 0;
  std::int64_t same = 0;
  for (std::int64_t r = 0; r < n; ++r) {
    const auto ra = a.begin() + r * c, rb = b.begin() + r * c;
    same += std::max_element(ra, ra + c) - ra == std::max_element(rb, rb + c) - rb;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    max_abs = std::max(max_abs, double(std::abs(a[i])));
    max_diff = std::max(max_diff, double(std::abs(a[i] - b[i])));
  }
  std::size_t off = 0;
  for (std::size_t i = 0; i < a.size(); ++i) off += std::abs(a[i] - b[i]) > max_abs / 127 / 2;
  Agreement r;
  r.top1 = double(same) / double(n);
  r.off = double(off) / double(a.size());
  r.max_steps = max_diff / (max_abs / 127);
  r.layers = int8.layers().size();
  return r;
}

}  // namespace qgrad_test
