// A two-parameter module with an int64 buffer for the checkpoint tests (tests/nn/
// test_checkpoint.cpp, and across devices test_cuda_module.cpp): its loss is built from
// broadcasting element-wise ops and reductions only, so it runs on every device.
#pragma once

#include <cstdint>

#include "core/factory.h"
#include "nn/module.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"

namespace qgrad_test {

struct Tiny : qgrad::nn::Module {
  qgrad::Tensor w, b, seen;
  explicit Tiny(std::uint64_t seed) {
    qgrad::Generator g(seed);
    w = register_parameter("w", qgrad::randn({3, 2}, g));
    b = register_parameter("b", qgrad::zeros({2}));
    seen = register_buffer("seen",
                           qgrad::scalar_tensor(0, qgrad::TensorOptions().dtype(qgrad::kInt64)));
  }
  qgrad::Tensor loss(const qgrad::Tensor& x) {
    // mean(tanh(x @ w + b)^2) with broadcasting ops only.
    qgrad::Tensor h = qgrad::sum(x.unsqueeze(2) * w.unsqueeze(0), {1}) + b;
    return qgrad::mean(qgrad::tanh(h) * qgrad::tanh(h));
  }
};

}  // namespace qgrad_test
