// CPU pooling kernels. float32 max/avg pooling runs on oneDNN's pooling_v2 primitives, created
// once per geometry through the primitive cache; the max-pool workspace (argmax per output) is
// kept from forward for backward. oneDNN's include-padding average always divides by kh*kw,
// PyTorch by the window clipped to the padded input (smaller for a ceil_mode window hanging
// past the right padding) or by divisor_override, so those outputs are rescaled. float64 runs
// reference loops with PyTorch's exact semantics (first maximum wins, NaN propagates); so does
// float32 max pooling of an input holding a NaN, which oneDNN would skip.
#include "ops/pool/pool_kernels.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/factory.h"
#include "core/strided_loop.h"
#include "ops/dnnl/dnnl_context.h"

namespace qgrad {

namespace {

namespace dnb = dnnl_backend;

// Planes (one per sample and channel) per thread chunk, so small tensors stay on one thread.
std::int64_t plane_grain(std::int64_t plane_elems) {
  return std::max<std::int64_t>(1, kParallelGrain / std::max<std::int64_t>(plane_elems, 1));
}

// First and one-past-last valid input index of a dilated window starting at `start`.
struct WindowRange {
  std::int64_t begin, end;
};
WindowRange dilated_window(std::int64_t start, std::int64_t k, std::int64_t d, std::int64_t in) {
  const std::int64_t end = std::min(start + (k - 1) * d + 1, in);
  while (start < 0) start += d;
  return {start, end};
}

// ---------------------------------------------------------------------------------------------
// float64 reference loops (PyTorch's CPU semantics).

template <typename T>
void max_pool_ref(const Tensor& x, const Tensor& out, const Tensor& argmax,
                  const Pool2dGeometry& g) {
  const T* px = x.data_ptr<T>();
  T* po = out.data_ptr<T>();
  std::int64_t* pa = argmax.defined() ? argmax.data_ptr<std::int64_t>() : nullptr;
  const std::int64_t in_plane = g.ih * g.iw, out_plane = g.oh * g.ow;
  parallel_for(g.n * g.c, plane_grain(in_plane), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t p = b; p < e; ++p) {
      const T* xp = px + p * in_plane;
      for (std::int64_t oy = 0; oy < g.oh; ++oy) {
        const WindowRange ry = dilated_window(oy * g.sh - g.ph, g.kh, g.dh, g.ih);
        for (std::int64_t ox = 0; ox < g.ow; ++ox) {
          const WindowRange rx = dilated_window(ox * g.sw - g.pw, g.kw, g.dw, g.iw);
          T best = -std::numeric_limits<T>::infinity();
          // -1 marks a window with no input element (possible only with dilation).
          std::int64_t best_i =
              (ry.begin < ry.end && rx.begin < rx.end) ? ry.begin * g.iw + rx.begin : -1;
          for (std::int64_t y = ry.begin; y < ry.end; y += g.dh)
            for (std::int64_t xx = rx.begin; xx < rx.end; xx += g.dw) {
              const T v = xp[y * g.iw + xx];
              if (v > best || std::isnan(v)) {
                best = v;
                best_i = y * g.iw + xx;
              }
            }
          po[p * out_plane + oy * g.ow + ox] = best;
          if (pa) pa[p * out_plane + oy * g.ow + ox] = best_i;
        }
      }
    }
  });
}

template <typename T>
void max_pool_backward_ref(const Tensor& gy, const Tensor& argmax, const Tensor& gx,
                           const Pool2dGeometry& g) {
  const T* pg = gy.data_ptr<T>();
  const std::int64_t* pa = argmax.data_ptr<std::int64_t>();
  T* px = gx.data_ptr<T>();
  const std::int64_t in_plane = g.ih * g.iw, out_plane = g.oh * g.ow;
  parallel_for(g.n * g.c, plane_grain(in_plane), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t p = b; p < e; ++p) {
      T* xp = px + p * in_plane;
      std::fill(xp, xp + in_plane, T(0));
      for (std::int64_t o = 0; o < out_plane; ++o) {
        const std::int64_t i = pa[p * out_plane + o];
        if (i >= 0) xp[i] += pg[p * out_plane + o];
      }
    }
  });
}

// Window of output row o clipped to the input, and PyTorch's divisor for it.
struct AvgWindow {
  std::int64_t begin, end, padded;  // padded: length clipped to the padded input only
};
AvgWindow avg_window(std::int64_t o, std::int64_t k, std::int64_t s, std::int64_t p,
                     std::int64_t in) {
  const std::int64_t start = o * s - p;
  const std::int64_t end = std::min(start + k, in + p);
  return {std::max<std::int64_t>(start, 0), std::min(end, in), end - start};
}

std::int64_t avg_divisor(const AvgWindow& y, const AvgWindow& x, bool count_include_pad,
                         std::int64_t divisor_override) {
  if (divisor_override > 0) return divisor_override;
  if (count_include_pad) return y.padded * x.padded;
  return (y.end - y.begin) * (x.end - x.begin);
}

template <typename T>
void avg_pool_ref(const Tensor& x, const Tensor& out, const Pool2dGeometry& g,
                  bool count_include_pad, std::int64_t divisor_override) {
  const T* px = x.data_ptr<T>();
  T* po = out.data_ptr<T>();
  const std::int64_t in_plane = g.ih * g.iw, out_plane = g.oh * g.ow;
  parallel_for(g.n * g.c, plane_grain(in_plane), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t p = b; p < e; ++p) {
      const T* xp = px + p * in_plane;
      for (std::int64_t oy = 0; oy < g.oh; ++oy) {
        const AvgWindow wy = avg_window(oy, g.kh, g.sh, g.ph, g.ih);
        for (std::int64_t ox = 0; ox < g.ow; ++ox) {
          const AvgWindow wx = avg_window(ox, g.kw, g.sw, g.pw, g.iw);
          T sum = 0;
          for (std::int64_t y = wy.begin; y < wy.end; ++y)
            for (std::int64_t xx = wx.begin; xx < wx.end; ++xx) sum += xp[y * g.iw + xx];
          const std::int64_t div = avg_divisor(wy, wx, count_include_pad, divisor_override);
          po[p * out_plane + oy * g.ow + ox] = div > 0 ? sum / static_cast<T>(div) : T(0);
        }
      }
    }
  });
}

template <typename T>
void avg_pool_backward_ref(const Tensor& gy, const Tensor& gx, const Pool2dGeometry& g,
                           bool count_include_pad, std::int64_t divisor_override) {
  const T* pg = gy.data_ptr<T>();
  T* px = gx.data_ptr<T>();
  const std::int64_t in_plane = g.ih * g.iw, out_plane = g.oh * g.ow;
  parallel_for(g.n * g.c, plane_grain(in_plane), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t p = b; p < e; ++p) {
      T* xp = px + p * in_plane;
      std::fill(xp, xp + in_plane, T(0));
      for (std::int64_t oy = 0; oy < g.oh; ++oy) {
        const AvgWindow wy = avg_window(oy, g.kh, g.sh, g.ph, g.ih);
        for (std::int64_t ox = 0; ox < g.ow; ++ox) {
          const AvgWindow wx = avg_window(ox, g.kw, g.sw, g.pw, g.iw);
          const std::int64_t div = avg_divisor(wy, wx, count_include_pad, divisor_override);
          if (div <= 0) continue;
          const T share = pg[p * out_plane + oy * g.ow + ox] / static_cast<T>(div);
          for (std::int64_t y = wy.begin; y < wy.end; ++y)
            for (std::int64_t xx = wx.begin; xx < wx.end; ++xx) xp[y * g.iw + xx] += share;
        }
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------
// float32 on oneDNN.

// True when x (contiguous float32) holds a NaN. The vectorised test sums v - v, which is NaN
// exactly when v is NaN or infinite; only such blocks are rescanned element by element.
bool contains_nan(const Tensor& x) {
  const float* p = x.data_ptr<float>();
  std::atomic<bool> found{false};
  // p is captured by value: through a captured reference GCC does not vectorise the loop.
  parallel_for(x.numel(), kParallelGrain, [p, &found](std::int64_t b, std::int64_t e) {
    constexpr std::int64_t kBlock = 4096;
    for (std::int64_t b0 = b; b0 < e && !found; b0 += kBlock) {
      const std::int64_t b1 = std::min(e, b0 + kBlock);
      float acc = 0;
#pragma omp simd reduction(+ : acc)
      for (std::int64_t i = b0; i < b1; ++i) acc += p[i] - p[i];
      if (!std::isnan(acc)) continue;
      for (std::int64_t i = b0; i < b1; ++i)
        if (std::isnan(p[i])) found = true;
    }
  });
  return found;
}

struct PoolForward {
  dnnl::pooling_v2_forward::primitive_desc pd;
  dnnl::pooling_v2_forward prim;
};
struct PoolBackward {
  dnnl::pooling_v2_backward::primitive_desc pd;
  dnnl::pooling_v2_backward prim;
};

std::string geometry_str(const Pool2dGeometry& g) {
  dnb::KeyBuilder k;
  k << Shape{g.n, g.c, g.ih, g.iw} << Shape{g.oh, g.ow} << Shape{g.kh, g.kw} << Shape{g.sh, g.sw}
    << Shape{g.ph, g.pw, g.pad_bottom, g.pad_right} << Shape{g.dh, g.dw};
  return k.str();
}

dnnl::memory::desc src_md(const Pool2dGeometry& g) {
  return dnb::plain_desc({g.n, g.c, g.ih, g.iw}, kFloat32);
}
dnnl::memory::desc dst_md(const Pool2dGeometry& g) {
  return dnb::plain_desc({g.n, g.c, g.oh, g.ow}, kFloat32);
}

// oneDNN counts dilation from 0 (0 = dense window); PyTorch from 1.
std::shared_ptr<PoolForward> pool_forward(dnnl::algorithm alg, bool training,
                                          const Pool2dGeometry& g) {
  dnb::KeyBuilder key;
  key << "pool2d_fwd" << static_cast<int>(alg) << training << geometry_str(g);
  return dnb::primitive_cache().get<PoolForward>(key.str(), [&] {
    const auto prop =
        training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
    dnnl::pooling_v2_forward::desc d(prop, alg, src_md(g), dst_md(g), {g.sh, g.sw}, {g.kh, g.kw},
                                     {g.dh - 1, g.dw - 1}, {g.ph, g.pw},
                                     {g.pad_bottom, g.pad_right});
    dnnl::pooling_v2_forward::primitive_desc pd(d, dnb::cpu_engine());
    return std::make_shared<PoolForward>(PoolForward{pd, dnnl::pooling_v2_forward(pd)});
  });
}

std::shared_ptr<PoolBackward> pool_backward(dnnl::algorithm alg, const Pool2dGeometry& g) {
  dnb::KeyBuilder key;
  key << "pool2d_bwd" << static_cast<int>(alg) << geometry_str(g);
  return dnb::primitive_cache().get<PoolBackward>(key.str(), [&] {
    const auto hint = pool_forward(alg, /*training=*/true, g);
    dnnl::pooling_v2_backward::desc d(alg, src_md(g), dst_md(g), {g.sh, g.sw}, {g.kh, g.kw},
                                      {g.dh - 1, g.dw - 1}, {g.ph, g.pw},
                                      {g.pad_bottom, g.pad_right});
    dnnl::pooling_v2_backward::primitive_desc pd(d, dnb::cpu_engine(), hint->pd);
    return std::make_shared<PoolBackward>(PoolBackward{pd, dnnl::pooling_v2_backward(pd)});
  });
}

void run(const dnnl::primitive& prim, const std::unordered_map<int, dnnl::memory>& args) {
  dnnl::stream& s = dnb::cpu_stream();
  prim.execute(s, args);
  s.wait();
}

// Per-output factors turning oneDNN's include-padding average (sum / (kh*kw)) into PyTorch's:
// factor(oy, ox) = row[oy] * col[ox]. `needed` is false when every factor is 1.
struct AvgRescale {
  bool needed = false;
  std::vector<float> row, col;
};

AvgRescale avg_rescale(const Pool2dGeometry& g, bool count_include_pad,
                       std::int64_t divisor_override) {
  AvgRescale r;
  r.row.assign(static_cast<std::size_t>(g.oh), 1.0f);
  r.col.assign(static_cast<std::size_t>(g.ow), 1.0f);
  if (divisor_override > 0) {
    r.needed = true;
    const float f = static_cast<float>(static_cast<double>(g.kh * g.kw) /
                                       static_cast<double>(divisor_override));
    std::fill(r.row.begin(), r.row.end(), f);
    return r;
  }
  if (!count_include_pad) return r;  // oneDNN's exclude-padding divisor is PyTorch's
  for (std::int64_t oy = 0; oy < g.oh; ++oy) {
    const std::int64_t len = avg_window(oy, g.kh, g.sh, g.ph, g.ih).padded;
    if (len != g.kh) r.needed = true;
    r.row[static_cast<std::size_t>(oy)] = static_cast<float>(g.kh) / static_cast<float>(len);
  }
  for (std::int64_t ox = 0; ox < g.ow; ++ox) {
    const std::int64_t len = avg_window(ox, g.kw, g.sw, g.pw, g.iw).padded;
    if (len != g.kw) r.needed = true;
    r.col[static_cast<std::size_t>(ox)] = static_cast<float>(g.kw) / static_cast<float>(len);
  }
  return r;
}

// dst = src * row[y] * col[x] over [N, C, oh, ow] planes (dst may be src).
void apply_rescale(const Tensor& src, const Tensor& dst, const Pool2dGeometry& g,
                   const AvgRescale& r) {
  const float* ps = src.data_ptr<float>();
  float* pd = dst.data_ptr<float>();
  const std::int64_t plane = g.oh * g.ow;
  parallel_for(g.n * g.c, plane_grain(plane), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t p = b; p < e; ++p)
      for (std::int64_t y = 0; y < g.oh; ++y) {
        const float fy = r.row[static_cast<std::size_t>(y)];
        const float* s = ps + p * plane + y * g.ow;
        float* d = pd + p * plane + y * g.ow;
        for (std::int64_t x = 0; x < g.ow; ++x)
          d[x] = s[x] * (fy * r.col[static_cast<std::size_t>(x)]);
      }
  });
}

dnnl::algorithm avg_algorithm(bool count_include_pad, std::int64_t divisor_override) {
  return (count_include_pad || divisor_override > 0) ? dnnl::algorithm::pooling_avg_include_padding
                                                     : dnnl::algorithm::pooling_avg_exclude_padding;
}

// ---------------------------------------------------------------------------------------------
// Adaptive average pooling (both dtypes).

std::int64_t adaptive_begin(std::int64_t i, std::int64_t out, std::int64_t in) {
  return (i * in) / out;
}
std::int64_t adaptive_end(std::int64_t i, std::int64_t out, std::int64_t in) {
  return ((i + 1) * in + out - 1) / out;
}

template <typename T>
void adaptive_avg_ref(const Tensor& x, const Tensor& out) {
  const std::int64_t planes = x.size(0) * x.size(1), ih = x.size(2), iw = x.size(3);
  const std::int64_t oh = out.size(2), ow = out.size(3);
  const T* px = x.data_ptr<T>();
  T* po = out.data_ptr<T>();
  parallel_for(planes, plane_grain(ih * iw), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t p = b; p < e; ++p) {
      const T* xp = px + p * ih * iw;
      for (std::int64_t oy = 0; oy < oh; ++oy) {
        const std::int64_t y0 = adaptive_begin(oy, oh, ih), y1 = adaptive_end(oy, oh, ih);
        for (std::int64_t ox = 0; ox < ow; ++ox) {
          const std::int64_t x0 = adaptive_begin(ox, ow, iw), x1 = adaptive_end(ox, ow, iw);
          T sum = 0;
          for (std::int64_t y = y0; y < y1; ++y)
            for (std::int64_t xx = x0; xx < x1; ++xx) sum += xp[y * iw + xx];
          po[(p * oh + oy) * ow + ox] = sum / static_cast<T>((y1 - y0) * (x1 - x0));
        }
      }
    }
  });
}

template <typename T>
void adaptive_avg_backward_ref(const Tensor& gy, const Tensor& gx) {
  const std::int64_t planes = gx.size(0) * gx.size(1), ih = gx.size(2), iw = gx.size(3);
  const std::int64_t oh = gy.size(2), ow = gy.size(3);
  const T* pg = gy.data_ptr<T>();
  T* px = gx.data_ptr<T>();
  parallel_for(planes, plane_grain(ih * iw), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t p = b; p < e; ++p) {
      T* xp = px + p * ih * iw;
      std::fill(xp, xp + ih * iw, T(0));
      for (std::int64_t oy = 0; oy < oh; ++oy) {
        const std::int64_t y0 = adaptive_begin(oy, oh, ih), y1 = adaptive_end(oy, oh, ih);
        for (std::int64_t ox = 0; ox < ow; ++ox) {
          const std::int64_t x0 = adaptive_begin(ox, ow, iw), x1 = adaptive_end(ox, ow, iw);
          const T share = pg[(p * oh + oy) * ow + ox] / static_cast<T>((y1 - y0) * (x1 - x0));
          for (std::int64_t y = y0; y < y1; ++y)
            for (std::int64_t xx = x0; xx < x1; ++xx) xp[y * iw + xx] += share;
        }
      }
    }
  });
}

Tensor max_pool2d_cpu(const Tensor& x, const Tensor& out, const Pool2dGeometry& g,
                      bool keep_workspace) {
  if (out.numel() == 0)
    return keep_workspace ? empty({0}, TensorOptions().dtype(kUInt8)) : Tensor();
  if (x.dtype() == kFloat64 || contains_nan(x)) {
    Tensor argmax = keep_workspace ? empty(out.shape(), TensorOptions().dtype(kInt64)) : Tensor();
    QGRAD_DISPATCH_FLOAT(x.dtype(), "max_pool2d",
                         [&] { max_pool_ref<scalar_t>(x, out, argmax, g); });
    return argmax;
  }
  return dnb::guarded("max_pool2d", geometry_str(g), [&] {
    const auto fwd = pool_forward(dnnl::algorithm::pooling_max, keep_workspace, g);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, dnb::wrap(fwd->pd.src_desc(), x)},
                                               {DNNL_ARG_DST, dnb::wrap(fwd->pd.dst_desc(), out)}};
    Tensor ws;
    if (keep_workspace) {
      const dnnl::memory::desc wmd = fwd->pd.workspace_desc();
      ws = empty({static_cast<std::int64_t>(wmd.get_size())}, TensorOptions().dtype(kUInt8));
      args.emplace(DNNL_ARG_WORKSPACE, dnb::wrap(wmd, ws));
    }
    run(fwd->prim, args);
    return ws;
  });
}

void max_pool2d_backward_cpu(const Tensor& gy, const Tensor& workspace, const Tensor& gx,
                             const Pool2dGeometry& g) {
  if (gx.numel() == 0) return;        // (gy is empty exactly when gx is: same N and C, sizes >= 1)
  if (workspace.dtype() == kInt64) {  // the reference forward's argmax
    QGRAD_DISPATCH_FLOAT(gx.dtype(), "max_pool2d backward",
                         [&] { max_pool_backward_ref<scalar_t>(gy, workspace, gx, g); });
    return;
  }
  dnb::guarded("max_pool2d backward", geometry_str(g), [&] {
    const auto bwd = pool_backward(dnnl::algorithm::pooling_max, g);
    run(bwd->prim, {{DNNL_ARG_DIFF_DST, dnb::wrap(bwd->pd.diff_dst_desc(), gy)},
                    {DNNL_ARG_DIFF_SRC, dnb::wrap(bwd->pd.diff_src_desc(), gx)},
                    {DNNL_ARG_WORKSPACE, dnb::wrap(bwd->pd.workspace_desc(), workspace)}});
  });
}

void avg_pool2d_cpu(const Tensor& x, const Tensor& out, const Pool2dGeometry& g,
                    bool count_include_pad, std::int64_t divisor_override) {
  if (out.numel() == 0) return;
  if (x.dtype() == kFloat64)
    return avg_pool_ref<double>(x, out, g, count_include_pad, divisor_override);
  dnb::guarded("avg_pool2d", geometry_str(g), [&] {
    const auto fwd =
        pool_forward(avg_algorithm(count_include_pad, divisor_override), /*training=*/false, g);
    run(fwd->prim, {{DNNL_ARG_SRC, dnb::wrap(fwd->pd.src_desc(), x)},
                    {DNNL_ARG_DST, dnb::wrap(fwd->pd.dst_desc(), out)}});
  });
  const AvgRescale r = avg_rescale(g, count_include_pad, divisor_override);
  if (r.needed) apply_rescale(out, out, g, r);
}

void avg_pool2d_backward_cpu(const Tensor& gy, const Tensor& gx, const Pool2dGeometry& g,
                             bool count_include_pad, std::int64_t divisor_override) {
  if (gx.numel() == 0) return;  // (gy is empty exactly when gx is: same N and C, sizes >= 1)
  if (gx.dtype() == kFloat64)
    return avg_pool_backward_ref<double>(gy, gx, g, count_include_pad, divisor_override);
  const AvgRescale r = avg_rescale(g, count_include_pad, divisor_override);
  Tensor gs = gy;
  if (r.needed) {
    gs = empty(gy.shape());
    apply_rescale(gy, gs, g, r);
  }
  dnb::guarded("avg_pool2d backward", geometry_str(g), [&] {
    const auto bwd = pool_backward(avg_algorithm(count_include_pad, divisor_override), g);
    run(bwd->prim, {{DNNL_ARG_DIFF_DST, dnb::wrap(bwd->pd.diff_dst_desc(), gs)},
                    {DNNL_ARG_DIFF_SRC, dnb::wrap(bwd->pd.diff_src_desc(), gx)}});
  });
}

void adaptive_avg_pool2d_cpu(const Tensor& x, const Tensor& out) {
  if (out.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(x.dtype(), "adaptive_avg_pool2d",
                       [&] { adaptive_avg_ref<scalar_t>(x, out); });
}

void adaptive_avg_pool2d_backward_cpu(const Tensor& gy, const Tensor& gx) {
  if (gx.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(gx.dtype(), "adaptive_avg_pool2d backward",
                       [&] { adaptive_avg_backward_ref<scalar_t>(gy, gx); });
}

}  // namespace

void register_pool_cpu_kernels(KernelRegistry& r) {
  r.table(kMaxPool2dKernels).define(DeviceType::CPU, &max_pool2d_cpu, kFloatingDTypes);
  r.table(kMaxPool2dBackwardKernels)
      .define(DeviceType::CPU, &max_pool2d_backward_cpu, kFloatingDTypes);
  r.table(kAvgPool2dKernels).define(DeviceType::CPU, &avg_pool2d_cpu, kFloatingDTypes);
  r.table(kAvgPool2dBackwardKernels)
      .define(DeviceType::CPU, &avg_pool2d_backward_cpu, kFloatingDTypes);
  r.table(kAdaptiveAvgPool2dKernels)
      .define(DeviceType::CPU, &adaptive_avg_pool2d_cpu, kFloatingDTypes);
  r.table(kAdaptiveAvgPool2dBackwardKernels)
      .define(DeviceType::CPU, &adaptive_avg_pool2d_backward_cpu, kFloatingDTypes);
}

}  // namespace qgrad
