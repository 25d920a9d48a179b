// The cross-device test's cases for the quantizers with CUDA kernels (see
// tests/ops/backend_op_case.h): torch.ao's fused observer + fake quant, per tensor (quint8,
// affine) and per channel (qint8, symmetric), two calls each so that the moving average runs,
// its output and its straight-through gradient, plus the state the calls leave (running min and
// max, scale, zero point), all bit for bit: the GPU runs the CPU's range, step and element.
#include <catch2/catch.hpp>

#include <limits>

#include "ops/backend_op_case.h"
#include "quant/torch_ao/fused_obs_fake_quant.h"

using namespace qgrad;
using qgrad_test::OpCase;

namespace {

// Two calls of the fused op on x and 1.5 x with fresh state on x's device; the second output,
// then the state, flattened into one tensor.
Tensor fused_twice(const Tensor& x, bool per_channel) {
  const Device d = x.device();
  const TensorOptions f32 = TensorOptions().dtype(kFloat32).device(d);
  const Tensor on = ones({1}, TensorOptions().dtype(kInt64).device(d));
  const float inf = std::numeric_limits<float>::infinity();
  const std::int64_t n = per_channel ? x.size(0) : 1;
  Tensor rmin = per_channel ? empty({0}, f32) : full({1}, inf, f32);
  Tensor rmax = per_channel ? empty({0}, f32) : full({1}, -inf, f32);
  Tensor scale = ones({n}, f32), zp = zeros({n}, TensorOptions().dtype(kInt32).device(d));
  const std::int64_t qmin = per_channel ? -128 : 0, qmax = per_channel ? 127 : 255;
  const std::int64_t axis = per_channel ? 0 : -1;
  const Tensor y1 = ao::fused_moving_avg_obs_fake_quant(x, on, on, rmin, rmax, scale, zp, 0.01,
                                                        qmin, qmax, axis, per_channel, per_channel);
  const Tensor y2 = ao::fused_moving_avg_obs_fake_quant(
      x * 1.5, on, on, rmin, rmax, scale, zp, 0.01, qmin, qmax, axis, per_channel, per_channel);
  return concat({(y1 + y2).reshape({-1}), rmin.reshape({-1}), rmax.reshape({-1}),
                 scale.reshape({-1}), zp.to(kFloat32).reshape({-1})},
                0);
}

void add_quant_cases(qgrad_test::OpCases& c) {
  OpCase k;
  k.fn = [](const std::vector<Tensor>& in) {
    return concat({fused_twice(in[0], false), fused_twice(in[1], true)}, 0);
  };
  // Per tensor: over 16384 elements, so several blocks reduce parts of it; per channel: odd rows.
  k.shapes = {{3, 5, 37, 41}, {7, 3, 5, 11}};
  c["fused_moving_avg_obs_fake_quant"] = k;
}

QGRAD_OP_CASES(add_quant_cases);

}  // namespace
