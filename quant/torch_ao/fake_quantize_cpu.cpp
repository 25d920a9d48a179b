// CPU kernels of torch.ao fake quantization. Each element is computed exactly as PyTorch 1.13's
// CPU kernels write it: x * (1/scale) (a multiply by the float reciprocal), std::nearbyint (round
// half to even), the zero point added after rounding, clamping before any float-to-int
// conversion, and the learnable backward's two fused multiply-adds (PyTorch's vectorised kernel is
// contracted into FMAs there; hd::fma reproduces it; everything else is compiled with
// -ffp-contract=off). The elements are fake_quantize_elem.h's, the forward's run by the fake
// quantizers' shared value + mask loop (quant/value_mask_loop.h). Where PyTorch converts an
// out-of-range float to int64 (undefined behaviour that maps +inf, NaN and huge values to quant_min
// on x86), qgrad clamps first: +inf and huge positive values go to quant_max, NaN propagates to the
// output with a zero gradient mask. The kernels are reached only through the "torch_ao.*" tables
// registered at the end.
#include "quant/torch_ao/fake_quantize_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/channel_loop.h"
#include "core/cpu_map.h"
#include "core/dtype.h"
#include "core/strided_loop.h"
#include "quant/torch_ao/fake_quantize_elem.h"
#include "quant/torch_ao/fake_quantize_qparams_kernel.h"
#include "quant/torch_ao/learnable_fake_quantize_kernel.h"
#include "quant/value_mask_loop.h"

namespace qgrad::ao {

namespace {

template <typename T>
void per_tensor(const Tensor& x, float scale, std::int64_t zp, std::int64_t qmin, std::int64_t qmax,
                const Tensor& y, const Tensor& mask) {
  const T s = static_cast<T>(scale);
  const T inv = std::is_same<T, float>::value ? static_cast<T>(1.0f / scale) : T(1) / s;
  if (is_narrow(qmin, qmax, zp)) {
    quant::value_mask_map<T>(NarrowFakeQuantizeElem<T>{inv, s, static_cast<T>(zp),
                                                       static_cast<T>(qmin), static_cast<T>(qmax)},
                             x, y, mask);
  } else {
    quant::value_mask_map<T>(
        WidePerTensorFakeQuantizeElem<T>{inv, s, static_cast<T>(zp), static_cast<T>(qmin),
                                         static_cast<T>(qmax), static_cast<double>(qmin),
                                         static_cast<double>(qmax), zp},
        x, y, mask);
  }
}

template <typename T>
void per_channel(const Tensor& x, std::int64_t axis, const std::vector<double>& scale,
                 const std::vector<std::int64_t>& zp, std::int64_t qmin, std::int64_t qmax,
                 const Tensor& y, const Tensor& mask) {
  bool narrow = true;
  for (std::int64_t z : zp) narrow = narrow && is_narrow(qmin, qmax, z);
  const std::size_t C = scale.size();
  if (narrow) {
    std::vector<NarrowFakeQuantizeElem<T>> elems(C);
    for (std::size_t c = 0; c < C; ++c) {
      const T s = static_cast<T>(scale[c]);
      elems[c] = {T(1) / s, s, static_cast<T>(zp[c]), static_cast<T>(qmin), static_cast<T>(qmax)};
    }
    quant::value_mask_map_channels<T>(elems, x, axis, y, mask);
  } else {
    std::vector<WidePerChannelFakeQuantizeElem<T>> elems(C);
    for (std::size_t c = 0; c < C; ++c) {
      const T s = static_cast<T>(scale[c]);
      elems[c] = {T(1) / s,
                  static_cast<T>(zp[c]),
                  static_cast<double>(s),
                  static_cast<double>(qmin),
                  static_cast<double>(qmax),
                  static_cast<double>(zp[c])};
    }
    quant::value_mask_map_channels<T>(elems, x, axis, y, mask);
  }
}

// Runs the element over [b, end) and adds the gradient sums to s / z. Elements are processed in
// blocks through small buffers (so the element loop vectorises), and the sums go through kLanes
// independent double accumulators in a fixed order (so they do not depend on the thread count).
template <typename T, bool kNarrow>
void learnable_range(const LearnableGradElem<T>& elem, const T* __restrict__ px,
                     const T* __restrict__ pg, T* __restrict__ po, std::int64_t b, std::int64_t end,
                     double& s, double& z) {
  constexpr int kLanes = 16;
  constexpr std::int64_t kBlock = 256;
  const LearnableGradElem<T> e = elem;
  double as[kLanes] = {}, az[kLanes] = {};
  T bs[kBlock], bz[kBlock];
  for (std::int64_t i0 = b; i0 < end; i0 += kBlock) {
    const std::int64_t m = std::min(kBlock, end - i0);
    for (std::int64_t j = 0; j < m; ++j) {
      T ds, dz;
      po[i0 + j] = e.template operator()<kNarrow>(px[i0 + j], pg[i0 + j], ds, dz);
      bs[j] = ds;
      bz[j] = dz;
    }
    for (std::int64_t j = m; j < kBlock; ++j) bs[j] = bz[j] = T(0);
    for (std::int64_t j = 0; j < kBlock; j += kLanes)
      for (int l = 0; l < kLanes; ++l) {
        as[l] += static_cast<double>(bs[j + l]);
        az[l] += static_cast<double>(bz[j + l]);
      }
  }
  double ts = 0, tz = 0;
  for (int l = 0; l < kLanes; ++l) {
    ts += as[l];
    tz += az[l];
  }
  s += ts;
  z += tz;
}

template <typename T>
void learnable_range(const LearnableGradElem<T>& e, bool narrow, const T* px, const T* pg, T* po,
                     std::int64_t b, std::int64_t end, double& s, double& z) {
  if (narrow)
    learnable_range<T, true>(e, px, pg, po, b, end, s, z);
  else
    learnable_range<T, false>(e, px, pg, po, b, end, s, z);
}

// Reductions split into a fixed number of chunks that depends only on the size, so the summed
// gradients do not depend on the thread count.
constexpr std::int64_t kMaxChunks = 64;
constexpr std::int64_t kMinChunk = 16384;

std::int64_t chunk_count(std::int64_t n) {
  return std::max<std::int64_t>(1, std::min(kMaxChunks, (n + kMinChunk - 1) / kMinChunk));
}

template <typename T>
void learnable_per_tensor(const Tensor& x, const Tensor& dy, double scale, double zp,
                          std::int64_t qmin, std::int64_t qmax, double gf, const Tensor& dx,
                          double& dscale, double& dzp) {
  const LearnableGradElem<T> elem = make_learnable_elem<T>(scale, zp, qmin, qmax, gf, true);
  const bool narrow =
      std::is_same<T, double>::value || is_narrow(qmin, qmax, static_cast<std::int64_t>(zp));
  const T* px = x.data_ptr<T>();
  const T* pg = dy.data_ptr<T>();
  T* po = dx.data_ptr<T>();
  const std::int64_t n = x.numel();
  const std::int64_t K = chunk_count(n);
  const std::int64_t chunk = (n + K - 1) / K;
  std::vector<double> ps(static_cast<std::size_t>(K), 0.0), pz(static_cast<std::size_t>(K), 0.0);
  parallel_for(K, 2, [&](std::int64_t k0, std::int64_t k1) {
    for (std::int64_t k = k0; k < k1; ++k) {
      const std::int64_t b = k * chunk, end = std::min(n, b + chunk);
      double as = 0, az = 0;
      learnable_range(elem, narrow, px, pg, po, b, end, as, az);
      ps[static_cast<std::size_t>(k)] = as;
      pz[static_cast<std::size_t>(k)] = az;
    }
  });
  dscale = 0;
  dzp = 0;
  for (std::int64_t k = 0; k < K; ++k) {
    dscale += ps[static_cast<std::size_t>(k)];
    dzp += pz[static_cast<std::size_t>(k)];
  }
}

template <typename T>
void learnable_per_channel(const Tensor& x, const Tensor& dy, std::int64_t axis,
                           const std::vector<double>& scale, const std::vector<double>& zp,
                           std::int64_t qmin, std::int64_t qmax, double gf, const Tensor& dx,
                           std::vector<double>& dscale, std::vector<double>& dzp) {
  const std::size_t C = scale.size();
  std::vector<LearnableGradElem<T>> elems;
  elems.reserve(C);
  bool narrow = true;
  for (std::size_t c = 0; c < C; ++c) {
    elems.push_back(make_learnable_elem<T>(scale[c], zp[c], qmin, qmax, gf, false));
    narrow = narrow && (std::is_same<T, double>::value ||
                        is_narrow(qmin, qmax, static_cast<std::int64_t>(zp[c])));
  }
  const T* px = x.data_ptr<T>();
  const T* pg = dy.data_ptr<T>();
  T* po = dx.data_ptr<T>();
  ChannelLoop loop(x.shape(), axis);
  const std::int64_t rows = loop.rows();
  const std::int64_t K = chunk_count(loop.numel());
  const std::int64_t chunk_rows = (rows + K - 1) / K;
  std::vector<double> ps(static_cast<std::size_t>(K) * C, 0.0), pz(ps.size(), 0.0);
  parallel_for(K, 2, [&](std::int64_t k0, std::int64_t k1) {
    for (std::int64_t k = k0; k < k1; ++k) {
      double* as = ps.data() + k * static_cast<std::int64_t>(C);
      double* az = pz.data() + k * static_cast<std::int64_t>(C);
      const std::int64_t r0 = k * chunk_rows, r1 = std::min(rows, r0 + chunk_rows);
      loop.run_rows(r0, r1, [&](std::int64_t c, std::int64_t off, std::int64_t n) {
        double s = 0, z = 0;
        learnable_range(elems[static_cast<std::size_t>(c)], narrow, px, pg, po, off, off + n, s, z);
        as[c] += s;
        az[c] += z;
      });
    }
  });
  dscale.assign(C, 0.0);
  dzp.assign(C, 0.0);
  for (std::int64_t k = 0; k < K; ++k)
    for (std::size_t c = 0; c < C; ++c) {
      dscale[c] += ps[static_cast<std::size_t>(k) * C + c];
      dzp[c] += pz[static_cast<std::size_t>(k) * C + c];
    }
}

void fake_quantize_per_tensor_cpu(const Tensor& x, float scale, std::int64_t zero_point,
                                  std::int64_t quant_min, std::int64_t quant_max, const Tensor& y,
                                  const Tensor& mask) {
  if (y.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(x.dtype(), "fake_quantize_per_tensor_affine", [&] {
    per_tensor<scalar_t>(x, scale, zero_point, quant_min, quant_max, y, mask);
  });
}

void fake_quantize_per_channel_cpu(const Tensor& x, std::int64_t axis,
                                   const std::vector<double>& scale,
                                   const std::vector<std::int64_t>& zero_point,
                                   std::int64_t quant_min, std::int64_t quant_max, const Tensor& y,
                                   const Tensor& mask) {
  if (y.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(x.dtype(), "fake_quantize_per_channel_affine", [&] {
    per_channel<scalar_t>(x, axis, scale, zero_point, quant_min, quant_max, y, mask);
  });
}

void masked_gradient_cpu(const Tensor& dy, const Tensor& mask, const Tensor& dx) {
  QGRAD_DISPATCH_FLOAT(dx.dtype(), "fake_quantize backward", [&] {
    cpu::map<scalar_t, scalar_t, std::uint8_t>(MaskedGradientElem<scalar_t>{}, dx, dy, mask);
  });
}

void learnable_per_tensor_backward_cpu(const Tensor& x, const Tensor& dy, double scale,
                                       double zero_point, std::int64_t quant_min,
                                       std::int64_t quant_max, double grad_factor, const Tensor& dx,
                                       double& dscale, double& dzero_point) {
  dscale = dzero_point = 0;
  if (x.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(x.dtype(), "_fake_quantize_learnable_per_tensor_affine backward", [&] {
    learnable_per_tensor<scalar_t>(x, dy, scale, zero_point, quant_min, quant_max, grad_factor, dx,
                                   dscale, dzero_point);
  });
}

void learnable_per_channel_backward_cpu(const Tensor& x, const Tensor& dy, std::int64_t axis,
                                        const std::vector<double>& scale,
                                        const std::vector<double>& zero_point,
                                        std::int64_t quant_min, std::int64_t quant_max,
                                        double grad_factor, const Tensor& dx,
                                        std::vector<double>& dscale,
                                        std::vector<double>& dzero_point) {
  dscale.assign(scale.size(), 0.0);
  dzero_point.assign(scale.size(), 0.0);
  if (x.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(x.dtype(), "_fake_quantize_learnable_per_channel_affine backward", [&] {
    learnable_per_channel<scalar_t>(x, dy, axis, scale, zero_point, quant_min, quant_max,
                                    grad_factor, dx, dscale, dzero_point);
  });
}

void fake_quantize_qparams_cpu(const Tensor& x, const Tensor& scale, const Tensor& zero_point,
                               std::int64_t axis, std::int64_t quant_min, std::int64_t quant_max,
                               const Tensor& y, const Tensor& mask) {
  fake_quantize_qparams<cpu::Map>(x, scale, zero_point, axis, quant_min, quant_max, y, mask);
}

void check_qparams_cpu(const char* op, const Tensor& scale, const Tensor& zero_point, bool float_zp,
                       std::int64_t quant_min, std::int64_t quant_max) {
  const std::vector<float> s = scale.to_vector<float>();
  const std::vector<double> z = zero_point.to_vector<double>();
  for (std::size_t c = 0; c < s.size(); ++c)
    QGRAD_CHECK(qparams_usable(s[c], z[c], float_zp, static_cast<double>(quant_min),
                               static_cast<double>(quant_max)),
                ValueError, op, ": scale ", s[c], " and zero_point ", z[c],
                s.size() > 1 ? " of channel " + std::to_string(c) : std::string(),
                " cannot be used: the scale must be finite and > 0, and an integer zero point "
                "must be an integer in [quant_min, quant_max] = [",
                quant_min, ", ", quant_max, "] (a float one finite)");
}

void learnable_qparams_cpu(const Tensor& scale, const Tensor& zero_point, std::int64_t quant_min,
                           std::int64_t quant_max, bool per_tensor, const Tensor& forward_scale,
                           const Tensor& forward_zero_point, const Tensor& backward_zero_point) {
  learnable_qparams<cpu::Map>(scale, zero_point, quant_min, quant_max, per_tensor, forward_scale,
                              forward_zero_point, backward_zero_point);
}

void learnable_backward_operands_cpu(const Tensor& x, const Tensor& dy, const Tensor& scale,
                                     const Tensor& zero_point, std::int64_t axis,
                                     std::int64_t quant_min, std::int64_t quant_max,
                                     double grad_factor, const Tensor& dx, const Tensor& dscale,
                                     const Tensor& dzero_point) {
  learnable_backward_operands<cpu::Map>(x, dy, scale, zero_point, axis, quant_min, quant_max,
                                        grad_factor, dx, dscale, dzero_point);
}

}  // namespace

void register_fake_quantize_cpu_kernels(KernelRegistry& r) {
  r.table(kLearnableQParamsKernels)
      .define(DeviceType::CPU, &learnable_qparams_cpu, kFloatingDTypes);
  r.table(kLearnableBackwardOperandsKernels)
      .define(DeviceType::CPU, &learnable_backward_operands_cpu, kFloatingDTypes);
  r.table(kFakeQuantizeQParamsKernels)
      .define(DeviceType::CPU, &fake_quantize_qparams_cpu, kFloatingDTypes);
  r.table(kCheckQParamsKernels).define(DeviceType::CPU, &check_qparams_cpu, kFloatingDTypes);
  r.table(kFakeQuantizePerTensorKernels)
      .define(DeviceType::CPU, &fake_quantize_per_tensor_cpu, kFloatingDTypes);
  r.table(kFakeQuantizePerChannelKernels)
      .define(DeviceType::CPU, &fake_quantize_per_channel_cpu, kFloatingDTypes);
  r.table(kMaskedGradientKernels).define(DeviceType::CPU, &masked_gradient_cpu, kFloatingDTypes);
  r.table(kLearnablePerTensorBackwardKernels)
      .define(DeviceType::CPU, &learnable_per_tensor_backward_cpu, kFloatingDTypes);
  r.table(kLearnablePerChannelBackwardKernels)
      .define(DeviceType::CPU, &learnable_per_channel_backward_cpu, kFloatingDTypes);
}

}  // namespace qgrad::ao
