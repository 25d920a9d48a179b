// A tour of qgrad's quantizer families: one small example per family (NVIDIA pytorch_quantization
// / ModelOpt, PyTorch torch.ao with its observers and LSQ, Horizon, AIMET, and the LSQ / LSQ+ /
// PACT papers) run on a handful of values, printing inputs, outputs and gradients. The expected
// numbers written next to each example (the worked examples of the quantization spec, values
// PyTorch 1.13 prints for the same calls, and hand-derived grid values) are checked: any mismatch
// is reported and the program exits with status 1, so the test suite runs it. docs/quantization.md
// explains each family and quotes these snippets.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "qgrad.h"

using namespace qgrad;

namespace {

std::string list_str(const std::vector<double>& values) {
  std::string s = "[";
  for (double v : values) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%.8g", s.size() > 1 ? ", " : "", v);
    s += buf;
  }
  return s + "]";
}

std::string values_str(const Tensor& t) {
  return list_str(t.to_vector<double>());
}

void show(const char* label, const Tensor& t) {
  std::printf("  %-14s %s\n", label, values_str(t).c_str());
}

void section(const char* title) {
  std::printf("\n== %s ==\n", title);
}

// Compares what qgrad computed with the numbers written in this file and counts mismatches.
// tol is relative to max(1, |expected|); 0 asks for exact equality.
class Checker {
 public:
  void values(const char* what, const Tensor& got, const std::vector<double>& want,
              double tol = 0) {
    const std::vector<double> g = got.to_vector<double>();
    bool ok = g.size() == want.size();
    for (std::size_t i = 0; ok && i < g.size(); ++i)
      ok = std::fabs(g[i] - want[i]) <= tol * std::fmax(1.0, std::fabs(want[i]));
    if (!ok) fail(what, "got " + list_str(g) + ", expected " + list_str(want));
  }
  void that(const char* what, bool ok) {
    if (!ok) fail(what, "condition is false");
  }
  int failures() const { return failures_; }

 private:
  void fail(const char* what, const std::string& msg) {
    std::printf("  CHECK FAILED: %s: %s\n", what, msg.c_str());
    ++failures_;
  }
  int failures_ = 0;
};

// ---- NVIDIA pytorch_quantization / TensorRT Model Optimizer ----
void nvidia_family(Checker& check) {
  section("NVIDIA pytorch_quantization / ModelOpt (quant/nvidia)");

  // [nvidia-int] scale = 127 / amax, q = clamp(rne(x * scale), -127, 127), out = q / scale.
  Tensor x = tensor({-1.5, -0.5, -0.003, 0.25, 0.7, 1.0}).set_requires_grad(true);
  Tensor amax = scalar_tensor(1.0);
  auto [q, scale] = nvidia::tensor_quant(x.detach(), amax);  // 8 bits, narrow range
  Tensor y = nvidia::fake_tensor_quant(x, amax);
  y.backward(ones_like(y));  // clipped STE: dx = dy where |x| <= amax
  // [/nvidia-int]
  show("x", x);
  show("q", q);
  show("scale", scale);
  show("fake quant", y);
  show("dx", x.grad());
  check.values("tensor_quant q", q, {-127, -64, -0.0, 32, 89, 127});
  check.values("tensor_quant scale", scale, {127});
  check.values("fake_tensor_quant", y, {-1, -64 / 127.0, 0, 32 / 127.0, 89 / 127.0, 1}, 1e-7);
  check.values("fake_tensor_quant dx", x.grad(), {0, 1, 1, 1, 1, 1});

  // [nvidia-affine] The spec's gemmlowp example: range (-1, 3), 8 bits.
  Tensor xa = tensor({-1, -0.5, 0, 0.37, 2, 3.5}).set_requires_grad(true);
  Tensor ya = nvidia::fake_affine_tensor_quant(xa, -1.0, 3.0, 8);
  ya.backward(ones_like(ya));  // dx = dy where min <= x <= max
  // [/nvidia-affine]
  show("affine x", xa);
  show("affine out", ya);
  show("affine dx", xa.grad());
  check.values("fake_affine_tensor_quant (spec example)", ya,
               {-1.0039216, -0.5019608, 0, 0.3764706, 1.9921570, 2.9960785}, 1e-6);
  check.values("fake_affine_tensor_quant dx", xa.grad(), {1, 1, 1, 1, 1, 0});

  // [nvidia-fp8] E4M3 cast (no amax): round to nearest even, saturate at 448.
  Tensor x8 = tensor({0.1, 1.0, 300, 500, -0.01});
  Tensor y8 = nvidia::scaled_e4m3(x8, Tensor());
  // [/nvidia-fp8]
  show("e4m3 x", x8);
  show("e4m3 out", y8);
  check.values("scaled_e4m3 cast", y8, {0.1015625, 1, 288, 448, -0.009765625});

  // [nvidia-block] Dynamic 4-bit block quantization, one amax per block of 4 along the last axis.
  nvidia::BlockQuantSpec spec;
  spec.num_bits = 4;  // signed, narrow_range false: [-8, 7]
  spec.block_sizes.axes = {{-1, 4}};
  spec.block_sizes.type = nvidia::BlockQuantType::Dynamic;
  Tensor xb = tensor({0.1, -0.2, 0.3, 0.4, 10, 25, -30, 40});
  Tensor block_amax = nvidia::block_amax(xb, spec.block_sizes);  // [0.4, 40]
  Tensor yb = nvidia::block_fake_quant(xb, spec);
  // [/nvidia-block]
  show("block x", xb);
  show("block amax", block_amax);
  show("block out", yb);
  check.values("block_amax", block_amax, {0.4, 40}, 1e-7);
  // Block 1: scale 7/0.4 = 17.5, q = [2, -4 (tie -3.5 to even), 5, 7]; block 2: scale 0.175.
  check.values("block_fake_quant", yb,
               {2 / 17.5, -4 / 17.5, 5 / 17.5, 7 / 17.5, 2 / 0.175, 4 / 0.175, -5 / 0.175, 40},
               1e-6);

  // [nvidia-calib] Per-channel max calibration (axis 0 keeps its own amax), then fake quant.
  nvidia::MaxCalibrator calib({0});
  calib.collect(tensor({1, -3, 0.5, 2}).reshape({2, 2}));
  calib.collect(tensor({-4, 0, 1, 1}).reshape({2, 2}));
  Tensor ch_amax = calib.compute_amax();  // [[4], [2]]
  Tensor w = tensor({1, -3, 0.5, 2}).reshape({2, 2});
  Tensor wq = nvidia::fake_tensor_quant(w, ch_amax);
  // [/nvidia-calib]
  show("calib amax", ch_amax);
  show("per-channel", wq);
  check.that("MaxCalibrator amax shape [2, 1]", ch_amax.shape() == Shape{2, 1});
  check.values("MaxCalibrator amax", ch_amax, {4, 2});
  check.values("per-channel fake_tensor_quant", wq,
               {32 / 31.75, -95 / 31.75, 32 / 63.5, 127 / 63.5}, 1e-7);

  // [nvidia-desc] QuantDescriptor: validated on construction, JSON keeps non-default fields.
  nvidia::QuantDescriptor desc(
      nvidia::QuantDescriptorOptions().num_bits(4).axis(0).narrow_range(true));
  const std::string json = desc.to_json().dump();
  const bool round_trip = nvidia::QuantDescriptor::from_json(desc.to_json()) == desc;
  // [/nvidia-desc]
  std::printf("  descriptor     %s\n", json.c_str());
  check.that("QuantDescriptor JSON", json == R"({"axis":0,"narrow_range":true,"num_bits":4})");
  check.that("QuantDescriptor JSON round trip", round_trip);
}

// ---- PyTorch torch.ao ----
void torch_ao_family(Checker& check) {
  section("PyTorch torch.ao (quant/torch_ao, quant/observer)");

  // [ao-tensor] y = (clamp(rne(x * (1/scale)) + zp, qmin, qmax) - zp) * scale.
  Tensor x = tensor({-0.6, -0.05, 0.0, 0.15, 0.25, 1.3, 30.0}).set_requires_grad(true);
  Tensor y = ao::fake_quantize_per_tensor_affine(x, /*scale=*/0.1, /*zero_point=*/5, 0, 255);
  y.backward(ones_like(y));  // STE: dx = dy where qmin <= rne(x/scale) + zp <= qmax
  // [/ao-tensor]
  show("x", x);
  show("per-tensor", y);
  show("dx", x.grad());
  // PyTorch 1.13: torch.fake_quantize_per_tensor_affine(x, 0.1, 5, 0, 255).
  check.values("fake_quantize_per_tensor_affine", y,
               {-0.5, 0, 0, 0.20000000298023224, 0.20000000298023224, 1.3000000715255737, 25});
  check.values("fake_quantize_per_tensor_affine dx", x.grad(), {0, 1, 1, 1, 1, 1, 0});

  // [ao-channel] One (scale, zero point) per index of axis 0, range [-8, 7].
  Tensor xc = tensor({-1, 0.26, 0.3, -5, 1.75, 4}).reshape({2, 3}).set_requires_grad(true);
  Tensor scales = tensor({0.1, 0.5});
  Tensor zero_points = from_vector<std::int32_t>({0, 2});
  Tensor yc = ao::fake_quantize_per_channel_affine(xc, scales, zero_points, 0, -8, 7);
  yc.backward(ones_like(yc));
  // [/ao-channel]
  show("per-channel", yc);
  show("dx", xc.grad());
  check.values("fake_quantize_per_channel_affine", yc,
               {-0.800000011920929, 0.30000001192092896, 0.30000001192092896, -5, 2, 2.5});
  check.values("fake_quantize_per_channel_affine dx", xc.grad(), {0, 1, 1, 1, 1, 0});

  // [ao-lsq] The spec's LSQ example (PyTorch's _LearnableFakeQuantize arithmetic).
  Tensor xl = tensor({-1, -0.26, 0, 0.04, 0.05, 0.26, 1, 12.8, 13}).set_requires_grad(true);
  Tensor s = full({1}, 0.1).set_requires_grad(true);
  Tensor zp = full({1}, 2.5).set_requires_grad(true);
  Tensor yl = ao::fake_quantize_learnable_per_tensor_affine(xl, s, zp, 0, 127, /*grad_factor=*/1);
  yl.backward(ones_like(yl));
  // [/ao-lsq]
  show("lsq y", yl);
  show("lsq dx", xl.grad());
  show("lsq dscale", s.grad());
  show("lsq dzp", zp.grad());
  check.values(
      "learnable fake quant y", yl,
      {-0.20000000298023224, -0.20000000298023224, 0, 0, 0, 0.30000001192092896, 1, 12.5, 12.5});
  check.values("learnable fake quant dx", xl.grad(), {0, 1, 1, 1, 1, 1, 1, 0, 0});
  check.values("learnable fake quant dscale", s.grad(), {245.1f});  // exact, as PyTorch
  check.values("learnable fake quant dzero_point", zp.grad(), {-0.3}, 1e-6);

  // [ao-observer] Observer -> qparams -> fake quantization.
  ao::MovingAverageMinMaxObserver obs;  // averaging_constant 0.01, quint8, per-tensor affine
  obs.forward(tensor({-1.0, 0.5, 2.0}));
  obs.forward(tensor({-3.0, 4.0}));  // m = m + 0.01 * (batch_m - m)
  ao::QParams qp = obs.calculate_qparams();
  // [/ao-observer]
  show("observer min", obs.min_val());
  show("observer max", obs.max_val());
  show("scale", qp.scale);
  show("zero_point", qp.zero_point);
  // PyTorch 1.13: min -1.02, max 2.02, scale 0.011921568773686886, zero point 86.
  check.values("MovingAverageMinMaxObserver min/max",
               tensor({obs.min_val().item(), obs.max_val().item()}), {-1.02f, 2.02f});
  check.values("calculate_qparams scale", qp.scale, {0.011921568773686886});
  check.values("calculate_qparams zero_point", qp.zero_point, {86});
}

// ---- Horizon ----
void horizon_family(Checker& check) {
  section("Horizon (quant/horizon)");

  // [horizon-fq] Symmetric: y = clamp(round(x / scale), -128, 127) * scale.
  Tensor x = tensor({0.25, 0.75, -0.25, 1.25, 100}).set_requires_grad(true);
  Tensor scale = full({1}, 0.5);
  Tensor even = horizon::fake_quantize(x, scale);  // qint8, half to even, saturate
  Tensor up = horizon::fake_quantize(x.detach(), scale, horizon::QDType::QInt8, std::nullopt,
                                     horizon::RoundMode::HalfUp);  // floor(x/scale + 0.5)
  even.backward(ones_like(even));  // saturate: no gradient where round(x/scale) is clamped
  // [/horizon-fq]
  show("x", x);
  show("half to even", even);
  show("half up", up);
  show("dx", x.grad());
  check.values("horizon fake_quantize half to even", even, {0, 1, -0.0, 1, 63.5});
  check.values("horizon fake_quantize half up", up, {0.5, 1, 0, 1.5, 63.5});
  check.values("horizon fake_quantize dx", x.grad(), {1, 1, 1, 1, 0});

  // [horizon-states] QAT observes and quantizes; Validation uses a fixed scale.
  horizon::FakeQuantizer fq;                            // qint8, per tensor, moving average 0.01
  Tensor y_qat = fq.forward(tensor({-2.0, 0.5, 1.0}));  // scale = 2 / 127.5
  const float qat_scale = fq.scale().item<float>();
  fq.set_state(horizon::FakeQuantizer::State::Validation);
  fq.set_qparams({0.25});
  Tensor y_val = fq.forward(tensor({0.3, 100.0}));
  // [/horizon-states]
  show("QAT out", y_qat);
  show("QAT scale", full({1}, qat_scale));
  show("validation out", y_val);
  check.that("horizon QAT scale", qat_scale == 2.0f / 127.5f);
  check.values("horizon validation", y_val, {0.25, 31.75});
}

// ---- AIMET ----
void aimet_family(Checker& check) {
  section("AIMET v2 (quant/aimet)");

  // [aimet-sym] Seed example: symmetric 8-bit, range [-12.8, 12.7] (scale 0.1).
  aimet::AffineQuantizer sym({}, /*bitwidth=*/8, /*symmetric=*/true);
  sym.set_range(-12.8, 12.7);
  Tensor x = tensor({2.57, -2.312, 0.153, 0.205}).reshape({2, 2});
  aimet::QuantizedTensor xq = sym.quantize(x);  // clamp(rne(x / scale) - offset, -128, 127)
  Tensor repr = xq.quantized_repr();            // int8
  // [/aimet-sym]
  show("x", x);
  show("quantized", xq.data());
  check.values("aimet symmetric quantize (seed example)", xq.data(), {26, -23, 2, 2});
  check.that("aimet symmetric quantized_repr is int8", repr.dtype() == kInt8);

  // [aimet-asym] Seed example: asymmetric 8-bit, range [-10, 41] (scale 0.2, offset -50).
  aimet::AffineQuantizer asym({}, 8, /*symmetric=*/false);
  asym.set_range(-10, 41);
  Tensor xa = tensor({0.39, 51.0, 3.521, 9.41}).reshape({2, 2});
  aimet::DequantizedTensor xqdq = asym.quantize_dequantize(xa);
  aimet::QuantizedTensor back = xqdq.quantize();  // exact: recovers the integers
  Tensor repr_u8 = back.quantized_repr();         // uint8
  // [/aimet-asym]
  show("x", xa);
  show("qdq", xqdq.data());
  show("quantized", back.data());
  check.values("aimet asymmetric quantize_dequantize (seed example)", xqdq.data(),
               {0.4, 41.0, 3.6, 9.4}, 1e-6);
  check.values("aimet asymmetric quantize (seed example)", back.data(), {52, 255, 68, 97});
  check.that("aimet asymmetric quantized_repr is uint8", repr_u8.dtype() == kUInt8);

  // [aimet-calib] compute_encodings: statistics while the scope is open, range set on exit.
  aimet::AffineQuantizer act({}, 8, /*symmetric=*/false);
  {
    auto scope = act.compute_encodings();
    act.quantize_dequantize(tensor({-1.0, 0.5, 3.0}));
  }
  // Range learning: min and max are parameters; the gradients flow through scale and offset.
  Tensor xr = tensor({-1.2, 0.3, 2.9, 3.4}).set_requires_grad(true);
  Tensor yr = act.quantize_dequantize(xr).data();
  yr.backward(ones_like(yr));
  // [/aimet-calib]
  show("encoding min", act.min());
  show("encoding max", act.max());
  show("qdq", yr);
  show("dx", xr.grad());
  show("dmin", act.min().grad());
  show("dmax", act.max().grad());
  check.values("aimet compute_encodings range", tensor({act.min().item(), act.max().item()}),
               {-1, 3});
  check.values("aimet quantize_dequantize dx", xr.grad(), {0, 1, 1, 0});
  // By hand: s = 4/255, o = rne(-1/s) = -64, mask = [0, 1, 1, 0],
  // dscale = sum(clamp(rne(x/s), o, o + 255) - (x/s) * mask) = -64 - 0.125 + 0.125 + 191 = 127,
  // doffset = 2s; with ds/dmin = -1/255, ds/dmax = 1/255, do/dmin = 1/s - 1/(255 s^2) = 47.8125
  // and do/dmax = 1/(255 s^2) = 15.9375: dmin = 255.5/255, dmax = 254.5/255.
  check.values("aimet range-learning dmin", act.min().grad(), {255.5 / 255}, 1e-6);
  check.values("aimet range-learning dmax", act.max().grad(), {254.5 / 255}, 1e-6);
}

// ---- Papers: LSQ, LSQ+, PACT ----
void papers_family(Checker& check) {
  section("Papers: LSQ, LSQ+, PACT (quant/learnable)");

  // [lsq] LSQ: v_hat = rne(clip(v/s, -Q_N, Q_P)) * s, here s = 0.5, Q_N = 4, Q_P = 3.
  Tensor v = tensor({0.3, -2.6, 1.75, 10.0, 0.25}).set_requires_grad(true);
  Tensor s = full({1}, 0.5).set_requires_grad(true);
  const double g = learnable::lsq_grad_scale(v.numel(), 3);  // 1 / sqrt(N * Q_P)
  Tensor vq = learnable::lsq_quantize(v, s, 4, 3, g);
  vq.backward(ones_like(vq));
  // ds = g * sum(rne(v/s) - v/s inside, -Q_N or Q_P when clipped)
  // [/lsq]
  show("v", v);
  show("lsq", vq);
  show("dv", v.grad());
  show("ds", s.grad());
  check.values("lsq forward", vq, {0.5, -2, 1.5, 1.5, 0});
  check.values("lsq dv", v.grad(), {1, 0, 0, 0, 1});  // 3.5 > Q_P is clipped
  // v/s = [0.6, -5.2, 3.5, 20, 0.5]: 0.4 - 4 + 3 + 3 - 0.5 = 1.9
  check.values("lsq ds", s.grad(), {1.9 / std::sqrt(15.0)}, 1e-6);

  // [lsq-plus] LSQ+: x_hat = clamp(rne((x - beta)/s), n, p) * s + beta, s 0.5, beta 1, [-2, 3].
  Tensor xp = tensor({1.3, -5.0, 4.0, 2.26, 1.0}).set_requires_grad(true);
  Tensor sp = full({1}, 0.5).set_requires_grad(true);
  Tensor beta = full({1}, 1.0).set_requires_grad(true);
  Tensor yp = learnable::lsq_plus_quantize(xp, sp, beta, -2, 3);
  yp.backward(ones_like(yp));  // dbeta = dy where clamped, 0 inside
  // [/lsq-plus]
  show("lsq+", yp);
  show("dbeta", beta.grad());
  check.values("lsq+ forward", yp, {1.5, 0, 2.5, 2.5, 1});
  check.values("lsq+ dbeta", beta.grad(), {2});

  // [pact] PACT: y = clip(x, 0, alpha), dy/dalpha = 1[x >= alpha]; 2-bit grid on [0, alpha].
  Tensor xs = tensor({-1.0, 0.5, 0.1, 0.2, 1.5}).set_requires_grad(true);
  Tensor alpha = full({1}, 1.0).set_requires_grad(true);
  Tensor yq = learnable::pact_quantize(xs, alpha, /*num_bits=*/2);
  yq.backward(ones_like(yq));
  // [/pact]
  show("pact", yq);
  show("dx", xs.grad());
  show("dalpha", alpha.grad());
  check.values("pact_quantize", yq, {0, 2 / 3.0, 0, 1 / 3.0, 1}, 1e-7);
  check.values("pact dx", xs.grad(), {0, 1, 1, 1, 0});
  check.values("pact dalpha", alpha.grad(), {1});
}

}  // namespace

int main() {
  Checker check;
  nvidia_family(check);
  torch_ao_family(check);
  horizon_family(check);
  aimet_family(check);
  papers_family(check);
  if (check.failures() > 0) {
    std::printf("\n%d check(s) FAILED\n", check.failures());
    return 1;
  }
  std::printf("\nall checks passed\n");
  return 0;
}
