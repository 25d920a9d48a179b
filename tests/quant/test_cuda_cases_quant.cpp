// The cross-device test's cases for the quantizers with CUDA kernels (see
// tests/ops/backend_op_case.h): torch.ao's min/max observers (statistics and qparams after two
// batches, every scheme), its fake quantization per tensor and per channel (integer
// and float zero points, tensor and host qparams), and its fused observer + fake quant, per tensor
// (quint8, affine) and per channel (qint8, symmetric), two calls each so that the moving average
// runs, its output and its straight-through gradient, plus the state the calls leave (running min
// and max, scale, zero point), all bit for bit: the GPU runs the CPU's range, step and element.
// The learnable families (torch.ao's learnable fake quantization, LSQ / LSQ+, PACT, DoReFa, the
// learnable clip): outputs and input gradients bit for bit, parameters given on the device. The
// NVIDIA quantizers (integer per tensor / per channel / per element, scaled minifloats, the
// gemmlowp affine form, block amax and the max calibrator): the same, blocks found per element.
// AIMET (quantize, dequantize, quantize-dequantize per tensor and per channel, ste_round, the
// min/max encoding analyzer): outputs and dx bit for bit (the GPU takes the strided path).
#include <catch2/catch.hpp>

#include <functional>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "ops/backend_op_case.h"
#include "quant/aimet/affine_quantize.h"
#include "quant/aimet/minmax_encoding_analyzer.h"
#include "quant/horizon/horizon_fake_quantize.h"
#include "quant/learnable/dorefa.h"
#include "quant/learnable/learnable_clip.h"
#include "quant/learnable/lsq.h"
#include "quant/learnable/pact.h"
#include "quant/nvidia/block_quant.h"
#include "quant/nvidia/calibrator.h"
#include "quant/nvidia/tensor_quant.h"
#include "quant/observer/minmax_observer.h"
#include "quant/observer/per_channel_minmax_observer.h"
#include "quant/torch_ao/fake_quantize.h"
#include "quant/torch_ao/fused_obs_fake_quant.h"
#include "quant/torch_ao/learnable_fake_quantize.h"

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

// Per-channel qparams along axis 1 of an input with `channels` there: scales around 0.03, integer
// zero points in [-10, 10] (or float ones), on `device`.
std::pair<Tensor, Tensor> channel_qparams(std::int64_t channels, bool float_zp, Device device) {
  std::vector<float> s, zf;
  std::vector<std::int32_t> zi;
  for (std::int64_t c = 0; c < channels; ++c) {
    s.push_back(0.02f + 0.005f * static_cast<float>(c));
    zi.push_back(static_cast<std::int32_t>(c * 7 % 21) - 10);
    zf.push_back(static_cast<float>(zi.back()) + 0.25f);
  }
  const Tensor scale = from_vector(s, {channels}).to(device);
  return {scale, float_zp ? from_vector(zf, {channels}).to(device)
                          : from_vector(zi, {channels}).to(device)};
}

// An observer's statistics after two batches (x, then 1.5 x - 0.25) and its qparams, flattened:
// min, max, scale, zero point. The statistics start on x's device.
Tensor observe_twice(ao::UniformQuantizationObserver& obs, const Tensor& x) {
  for (Tensor* t : {&obs.min_val(), &obs.max_val(), &obs.eps()}) *t = t->to(x.device());
  obs.forward(x);
  obs.forward(x * 1.5 - 0.25);
  const ao::QParams q = obs.calculate_qparams();
  return concat({obs.min_val().reshape({-1}), obs.max_val().reshape({-1}), q.scale.reshape({-1}),
                 q.zero_point.to(kFloat32).reshape({-1})},
                0);
}

void add_observer_cases(qgrad_test::OpCases& c) {
  using ao::QScheme;
  const ao::ObserverOptions affine,
      symmetric =
          ao::ObserverOptions().dtype(ao::QuantDType::QInt8).qscheme(QScheme::PerTensorSymmetric);
  const ao::ObserverOptions channel_symmetric =
      ao::ObserverOptions().dtype(ao::QuantDType::QInt8).qscheme(QScheme::PerChannelSymmetric);
  const ao::ObserverOptions channel_float = ao::ObserverOptions()
                                                .dtype(ao::QuantDType::QUInt8)
                                                .qscheme(QScheme::PerChannelAffineFloatQParams);
  auto add = [&](const char* name, std::function<Tensor(const Tensor&)> fn) {
    OpCase k;
    k.fn = [fn](const std::vector<Tensor>& in) { return fn(in[0]); };
    k.shapes = {{6, 5, 7, 3}};
    k.differentiable = false;
    c[name] = k;
  };
  add("MinMaxObserver", [=](const Tensor& x) {
    ao::MinMaxObserver a(affine), s(symmetric);
    return concat({observe_twice(a, x), observe_twice(s, x)}, 0);
  });
  add("MovingAverageMinMaxObserver", [=](const Tensor& x) {
    ao::MovingAverageMinMaxObserver a(0.01, affine), s(0.3, symmetric);
    return concat({observe_twice(a, x), observe_twice(s, x)}, 0);
  });
  add("PerChannelMinMaxObserver", [=](const Tensor& x) {
    ao::PerChannelMinMaxObserver a(1), s(0, channel_symmetric), f(-1, channel_float);
    return concat({observe_twice(a, x), observe_twice(s, x), observe_twice(f, x)}, 0);
  });
  add("MovingAveragePerChannelMinMaxObserver", [=](const Tensor& x) {
    ao::MovingAveragePerChannelMinMaxObserver a(0.01, 2), s(0.5, 0, channel_symmetric);
    return concat({observe_twice(a, x), observe_twice(s, x)}, 0);
  });
}

QGRAD_OP_CASES(add_observer_cases);

void add_quant_cases(qgrad_test::OpCases& c) {
  {
    // Horizon: per tensor (half to even, saturating) plus per channel along axis 1 (half up).
    OpCase k;
    k.fn = [](const std::vector<Tensor>& in) {
      const Device d = in[0].device();
      const Tensor s = full({1}, 0.021, TensorOptions().dtype(kFloat32).device(d));
      const Tensor sc = channel_qparams(in[0].size(1), false, d).first;
      return horizon::fake_quantize(in[0], s) +
             horizon::fake_quantize(in[0], sc, horizon::QDType::QInt4, 1,
                                    horizon::RoundMode::HalfUp, true);
    };
    k.shapes = {{3, 5, 7, 2}};
    c["horizon.fake_quantize"] = k;
  }
  {
    // quint8 affine, as a tensor-qparams call and as the host-scalar overload; inputs of about
    // +-3 reach both clamps.
    OpCase k;
    k.fn = [](const std::vector<Tensor>& in) {
      const Device d = in[0].device();
      const Tensor s = full({1}, 0.015, TensorOptions().dtype(kFloat32).device(d));
      const Tensor z = full({1}, 100.0, TensorOptions().dtype(kInt32).device(d));
      return ao::fake_quantize_per_tensor_affine(in[0], s, z, 0, 255) +
             ao::fake_quantize_per_tensor_affine(in[0] * 0.5, 0.01, -3, -128, 127);
    };
    k.shapes = {{3, 5, 7, 2}};
    c["fake_quantize_per_tensor_affine"] = k;
  }
  {
    // Along axis 1, with int32 zero points and with float ones (float_qparams).
    OpCase k;
    k.fn = [](const std::vector<Tensor>& in) {
      const auto [s, z] = channel_qparams(in[0].size(1), false, in[0].device());
      const auto [sf, zf] = channel_qparams(in[0].size(1), true, in[0].device());
      return ao::fake_quantize_per_channel_affine(in[0], s, z, 1, -128, 127) +
             ao::fake_quantize_per_channel_affine(in[0], sf, zf, 1, 0, 255);
    };
    k.shapes = {{3, 5, 7, 2}};
    c["fake_quantize_per_channel_affine"] = k;
  }
  OpCase k;
  k.fn = [](const std::vector<Tensor>& in) {
    return concat({fused_twice(in[0], false), fused_twice(in[1], true)}, 0);
  };
  // Per tensor: over 16384 elements, so several blocks reduce parts of it; per channel: odd rows.
  k.shapes = {{3, 5, 37, 41}, {7, 3, 5, 11}};
  c["fused_moving_avg_obs_fake_quant"] = k;
}

QGRAD_OP_CASES(add_quant_cases);

using UnaryCase = std::function<Tensor(const Tensor&)>;

// A case of one input of shape [3, 5, 7, 2] (odd sizes), compared with its gradient or not.
void add_unary_case(qgrad_test::OpCases& c, const char* name, UnaryCase fn, bool grad = true) {
  OpCase k;
  k.fn = [fn = std::move(fn)](const std::vector<Tensor>& in) { return fn(in[0]); };
  k.shapes = {{3, 5, 7, 2}};
  k.differentiable = grad;
  c[name] = k;
}

// A parameter tensor of `values` on `device` (float32).
Tensor on(Device device, std::vector<float> values) {
  const auto n = static_cast<std::int64_t>(values.size());
  return from_vector(values, {n}).to(device);
}

void add_learnable_cases(qgrad_test::OpCases& c) {
  auto add = [&](const char* name, UnaryCase fn) { add_unary_case(c, name, std::move(fn)); };
  // Per tensor with a zero point off the grid; per channel along axis 1.
  add("fake_quantize_learnable_per_tensor_affine", [](const Tensor& x) {
    return ao::fake_quantize_learnable_per_tensor_affine(x, on(x.device(), {0.02f}),
                                                         on(x.device(), {7.5f}), 0, 255, 0.3);
  });
  add("fake_quantize_learnable_per_channel_affine", [](const Tensor& x) {
    return ao::fake_quantize_learnable_per_channel_affine(
        x, on(x.device(), {0.02f, 0.03f, 0.05f, 0.07f, 0.011f}),
        on(x.device(), {0.0f, -3.0f, 4.0f, 1.5f, 2.0f}), 1, -8, 7);
  });
  add("lsq_quantize", [](const Tensor& x) {
    return learnable::lsq_quantize(x, on(x.device(), {0.125f}), 8, 7, 0.2);
  });
  add("lsq_plus_quantize", [](const Tensor& x) {
    return learnable::lsq_plus_quantize(x, on(x.device(), {0.1f}), on(x.device(), {-0.3f}), -8, 7);
  });
  add("pact_clip", [](const Tensor& x) { return learnable::pact_clip(x, on(x.device(), {1.5f})); });
  add("pact_quantize",
      [](const Tensor& x) { return learnable::pact_quantize(x, on(x.device(), {1.25f}), 3); });
  add("dorefa_quantize_weight",
      [](const Tensor& x) { return learnable::dorefa_quantize_weight(x, 3); });
  // tanh comes from each device's math library: equal to rounding, not bit for bit.
  c["dorefa_quantize_weight"].match = qgrad_test::Match::Close;
  add("learnable_clip", [](const Tensor& x) {
    return learnable::learnable_clip(x, on(x.device(), {-0.7f}), on(x.device(), {1.1f}));
  });
  // The initialisation statistics (read on the host once): as one-element tensors.
  add("lsq_init_scale", [](const Tensor& x) {
    return full({1}, learnable::lsq_init_scale(x, 7), TensorOptions().device(x.device()));
  });
  c["lsq_init_scale"].differentiable = false;
  c["lsq_init_scale"].match = qgrad_test::Match::Close;  // a float64 sum in another order
  add("lsq_plus_init_minmax", [](const Tensor& x) {
    const auto [s, b] = learnable::lsq_plus_init_minmax(x, -8, 7);
    return from_vector<double>({s, b}, {2}).to(kFloat32).to(x.device());
  });
  c["lsq_plus_init_minmax"].differentiable = false;
}

QGRAD_OP_CASES(add_learnable_cases);

void add_nvidia_cases(qgrad_test::OpCases& c) {
  auto add = [&](const char* name, UnaryCase fn, bool grad = true) {
    add_unary_case(c, name, std::move(fn), grad);
  };
  // amax per tensor, per channel of axis 1 (keepdim), and one per element of the last two axes.
  auto amax_of = [](Device d, const Shape& shape, float base) {
    std::vector<float> v;
    for (std::int64_t i = 0; i < numel_of(shape); ++i)
      v.push_back(base + 0.125f * static_cast<float>(i % 7));
    return from_vector(v, shape).to(d);
  };
  add("fake_tensor_quant", [=](const Tensor& x) {
    const Device d = x.device();
    return nvidia::fake_tensor_quant(x, amax_of(d, {}, 2.0f), 8) +
           nvidia::fake_tensor_quant(x, amax_of(d, {1, 5, 1, 1}, 1.0f), 4, false, true) +
           nvidia::fake_tensor_quant(x, amax_of(d, {7, 2}, 0.5f), 3);
  });
  add("legacy_fake_tensor_quant", [=](const Tensor& x) {
    return nvidia::legacy_fake_tensor_quant(x, amax_of(x.device(), {1, 5, 1, 1}, 1.5f), 8);
  });
  add("tensor_quant", [=](const Tensor& x) {
    auto [q, s] = nvidia::tensor_quant(x, amax_of(x.device(), {1, 5, 1, 1}, 1.5f), 8);
    return q * s;  // the integers and their per-channel scale (broadcast)
  });
  add("scaled_e4m3", [=](const Tensor& x) {
    return nvidia::scaled_e4m3(x, amax_of(x.device(), {}, 2.5f)) +
           nvidia::scaled_e4m3(x, amax_of(x.device(), {1, 5, 1, 1}, 0.75f), 5, 2);
  });
  add("scaled_minifloat_quant", [=](const Tensor& x) {
    return nvidia::scaled_minifloat_quant(x, amax_of(x.device(), {}, 2.5f), nvidia::kE2M1);
  });
  add("fake_affine_tensor_quant",
      [](const Tensor& x) { return nvidia::fake_affine_tensor_quant(x, -1.25, 2.0, 4); });
  add(
      "block_amax",
      [](const Tensor& x) {
        nvidia::BlockSizes bs;
        bs.axes = {{-1, 2}, {1, 2}};
        return nvidia::block_amax(x, bs);
      },
      false);
  // Block quantization: 4-bit integer blocks of 2 x 2 with double quantization of the amax grid
  // (8-bit, blocks of 2 along the grid's last axis), MX (E2M1 elements, E8M0 scales) and NVFP4
  // (E2M1 elements, E4M3 block scales under a global scale), each dynamic; and a static
  // BlockQuantizer calibrated on two batches.
  auto spec_of = [](nvidia::NumBits bits, std::optional<nvidia::NumBits> scale_bits,
                    std::vector<std::pair<std::int64_t, std::int64_t>> scale_blocks = {}) {
    nvidia::BlockQuantSpec spec;
    spec.num_bits = bits;
    spec.block_sizes.axes = {{-1, 2}, {1, 2}};
    spec.block_sizes.type = nvidia::BlockQuantType::Dynamic;
    spec.block_sizes.scale_bits = scale_bits;
    spec.block_sizes.scale_block_sizes = std::move(scale_blocks);
    return spec;
  };
  const nvidia::BlockQuantSpec int_double = spec_of(4, nvidia::NumBits(8), {{-1, 2}});
  const nvidia::BlockQuantSpec mx = spec_of(nvidia::NumBits(2, 1), nvidia::NumBits(8, 0));
  const nvidia::BlockQuantSpec nvfp4 = spec_of(nvidia::NumBits(2, 1), nvidia::NumBits(4, 3));
  add("block_fake_quant", [=](const Tensor& x) {
    return nvidia::block_fake_quant(x, int_double) + nvidia::block_fake_quant(x, nvfp4) +
           nvidia::block_fake_quant(x, mx);
  });
  add(
      "block_effective_amax",
      [=](const Tensor& x) {
        return concat({nvidia::block_effective_amax(x, int_double).reshape({-1}),
                       nvidia::block_effective_amax(x, nvfp4).reshape({-1}),
                       nvidia::block_effective_amax(x, mx).reshape({-1})},
                      0);
      },
      false);
  add("BlockQuantizer", [=](const Tensor& x) {
    nvidia::BlockQuantSpec spec = int_double;
    spec.block_sizes.type = nvidia::BlockQuantType::Static;
    nvidia::BlockQuantizer q(spec);
    q.calibrate(x.detach());
    q.calibrate(x.detach() * 1.5 - 0.25);
    return q(x);
  });
  add(
      "MaxCalibrator",
      [](const Tensor& x) {
        nvidia::MaxCalibrator per_tensor({}, false), per_channel({1}, false);
        for (nvidia::MaxCalibrator* m : {&per_tensor, &per_channel}) {
          m->collect(x);
          m->collect(x * 1.5 - 0.25);
        }
        return concat(
            {per_tensor.compute_amax().reshape({-1}), per_channel.compute_amax().reshape({-1})}, 0);
      },
      false);
}

QGRAD_OP_CASES(add_nvidia_cases);

void add_aimet_cases(qgrad_test::OpCases& c) {
  auto add = [&](const char* name, UnaryCase fn, bool grad = true) {
    add_unary_case(c, name, std::move(fn), grad);
  };
  // Per tensor, and per channel of axis 1 ([5, 1, 1] encodings).
  auto enc = [](Device d, bool channel, float base) {
    const Shape shape = channel ? Shape{5, 1, 1} : Shape{};
    std::vector<float> v;
    for (std::int64_t i = 0; i < numel_of(shape); ++i)
      v.push_back(base * (1.0f + 0.25f * static_cast<float>(i)));
    return from_vector(v, shape).to(d);
  };
  add("aimet.quantize_dequantize", [=](const Tensor& x) {
    const Device d = x.device();
    return aimet::quantize_dequantize(x, enc(d, false, 0.02f), enc(d, false, -128.0f), 0, 255) +
           aimet::quantize_dequantize(x, enc(d, true, 0.05f), enc(d, true, -3.0f), -8, 7);
  });
  add("aimet.quantize", [=](const Tensor& x) {
    return aimet::quantize(x, enc(x.device(), true, 0.03f), enc(x.device(), true, -2.0f), 0, 15);
  });
  add("aimet.dequantize", [=](const Tensor& x) {
    return aimet::dequantize(x, enc(x.device(), true, 0.03f), enc(x.device(), true, -2.0f));
  });
  add("aimet.ste_round", [](const Tensor& x) { return aimet::ste_round(x * 7.5); });
  add(
      "aimet.MinMaxEncodingAnalyzer",
      [](const Tensor& x) {
        aimet::MinMaxEncodingAnalyzer a(Shape{5, 1, 1});
        a.update_stats(x);
        a.update_stats(x * 1.5 - 0.25);
        const auto r = a.compute_encodings(255, false);
        return concat({r->first.reshape({-1}), r->second.reshape({-1})}, 0);
      },
      false);
}

QGRAD_OP_CASES(add_aimet_cases);

}  // namespace
