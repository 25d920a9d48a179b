// REQUIRE that gradcheck (core/autograd/gradcheck.h) passes, showing its message when it fails:
// for ops of several inputs and, as a shorthand, of one.
#pragma once

#include <catch2/catch.hpp>

#include <functional>
#include <vector>

#include "core/autograd/gradcheck.h"
#include "core/tensor.h"

namespace qgrad_test {

inline void require_gradcheck(
    const std::function<qgrad::Tensor(const std::vector<qgrad::Tensor>&)>& fn,
    const std::vector<qgrad::Tensor>& inputs) {
  const qgrad::GradcheckResult r = qgrad::gradcheck(fn, inputs);
  INFO(r.message);
  REQUIRE(r.ok);
}

inline void require_gradcheck(const std::function<qgrad::Tensor(const qgrad::Tensor&)>& f,
                              const qgrad::Tensor& x) {
  require_gradcheck([&](const std::vector<qgrad::Tensor>& v) { return f(v[0]); }, {x});
}

}  // namespace qgrad_test
