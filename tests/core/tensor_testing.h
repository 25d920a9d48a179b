// Helpers for the core tests: tensors with known values (element = its row-major index), reading
// a float64 element straight through shape/strides/offset (independent of the copy kernels),
// multi-index iteration, and a gradcheck wrapper that reports the mismatch on failure.
#pragma once

#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "qgrad.h"

namespace qgrad::testing {

// float64 (or `dt`) tensor of `shape` whose element k (row-major) is k.
inline Tensor iota(const Shape& shape, DType dt = kFloat64) {
  return arange(static_cast<double>(numel_of(shape)), TensorOptions().dtype(dt)).reshape(shape);
}

// Element `idx` of a float64 CPU tensor, read through its strides and storage offset.
inline double at(const Tensor& t, const Shape& idx) {
  REQUIRE(t.dtype() == kFloat64);
  REQUIRE(idx.size() == t.shape().size());
  const auto* base = static_cast<const double*>(t.impl()->storage->data());
  std::int64_t off = t.storage_offset();
  for (std::size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.strides()[d];
  return base[off];
}

// Calls f(idx) for every multi-index of `shape` in row-major order.
inline void for_each_index(const Shape& shape, const std::function<void(const Shape&)>& f) {
  if (numel_of(shape) == 0) return;
  Shape idx(shape.size(), 0);
  while (true) {
    f(idx);
    std::size_t d = shape.size();
    while (d > 0) {
      --d;
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
      if (d == 0) return;
    }
    if (shape.empty()) return;
  }
}

inline bool shares_storage(const Tensor& a, const Tensor& b) {
  return a.impl()->storage == b.impl()->storage;
}

// Runs gradcheck on float64 leaves and fails the test with gradcheck's message on a mismatch.
inline void check_gradients(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                            const std::vector<Tensor>& inputs, GradcheckOptions opts = {}) {
  GradcheckResult r = gradcheck(fn, inputs, opts);
  INFO(r.message);
  CHECK(r.ok);
}

// A float64 leaf that requires grad, with distinct non-trivial values.
inline Tensor leaf(const Shape& shape, std::uint64_t seed = 1) {
  Generator gen(seed);
  return randn(shape, gen, TensorOptions().dtype(kFloat64)).set_requires_grad(true);
}

}  // namespace qgrad::testing
