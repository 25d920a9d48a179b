// CUDA pooling kernels: max, average and adaptive average 2-D pooling, forward and backward, for
// float32 and float64, as plain CUDA kernels with the CPU reference loops' exact semantics
// (pool_cpu.cpp): PyTorch's windows (padding, dilation, ceil_mode through the geometry),
// count_include_pad and divisor_override divisors, NaN-propagating max whose gradient goes to the
// window's first maximum in row-major window order. Not cuDNN: its max-pool backward recomputes
// the argmax and does not promise the first of tied maxima, and its average divisors differ from
// PyTorch's at ceil_mode windows. The max forward saves the argmax (int64, a flat index into the
// H*W plane, -1 for a window with no input element) as the workspace. Every kernel runs one
// thread per output element (forward) or per input element (backward), so the backward gathers
// from the outputs whose windows hold the element, in the CPU's output order: no atomics, the
// same result on every run, and for float64 the CPU's bits.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/cuda_check.h"
#include "core/cuda_stream.h"
#include "core/factory.h"
#include "ops/pool/pool_kernels.h"

namespace qgrad {

namespace {

constexpr int kThreads = 256;

// A grid-stride launch over `total` elements on the device's stream.
template <typename Kernel, typename... Args>
void launch(const char* op, const Tensor& t, std::int64_t total, Kernel kernel, Args... args) {
  if (total == 0) return;
  const std::int64_t blocks = std::min<std::int64_t>((total + kThreads - 1) / kThreads, 1 << 16);
  const CudaDeviceGuard guard(t.device().index);
  kernel<<<static_cast<unsigned>(blocks), kThreads, 0, cuda_stream(t.device().index)>>>(total,
                                                                                        args...);
  QGRAD_CUDA_CHECK(cudaGetLastError(), op, "shape ", t.shape());
}

#define QGRAD_GRID_STRIDE(i, total)                                                       \
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; \
       i < (total); i += static_cast<std::int64_t>(blockDim.x) * gridDim.x)

// ---- max pooling ----

template <typename T>
__global__ void max_pool_kernel(std::int64_t total, const T* x, T* out, std::int64_t* argmax,
                                Pool2dGeometry g) {
  QGRAD_GRID_STRIDE(i, total) {
    const std::int64_t ox = i % g.ow, oy = (i / g.ow) % g.oh, p = i / (g.ow * g.oh);
    const T* xp = x + p * g.ih * g.iw;
    // The window's valid rows/columns: as dilated_window() on the CPU.
    std::int64_t y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
    const std::int64_t y1 = std::min(y0 + (g.kh - 1) * g.dh + 1, g.ih);
    const std::int64_t x1 = std::min(x0 + (g.kw - 1) * g.dw + 1, g.iw);
    while (y0 < 0) y0 += g.dh;
    while (x0 < 0) x0 += g.dw;
    T best = -std::numeric_limits<T>::infinity();
    std::int64_t best_i = (y0 < y1 && x0 < x1) ? y0 * g.iw + x0 : -1;
    for (std::int64_t y = y0; y < y1; y += g.dh)
      for (std::int64_t xx = x0; xx < x1; xx += g.dw) {
        const T v = xp[y * g.iw + xx];
        if (v > best || isnan(v)) {  // first maximum wins; a NaN propagates
          best = v;
          best_i = y * g.iw + xx;
        }
      }
    out[i] = best;
    if (argmax) argmax[i] = best_i;
  }
}

// The output rows (or columns) whose window, of k taps with dilation d and stride s after
// padding p, has a tap at input index `in`: tap t of output o reads o*s - p + t*d. Visited in
// increasing o (decreasing t), the CPU's output order.
template <typename F>
__device__ void for_each_window(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p,
                                std::int64_t d, std::int64_t n_out, F f) {
  for (std::int64_t t = k - 1; t >= 0; --t) {
    const std::int64_t u = in + p - t * d;
    if (u < 0 || u % s != 0) continue;
    const std::int64_t o = u / s;
    if (o < n_out) f(o);
  }
}

template <typename T>
__global__ void max_pool_backward_kernel(std::int64_t total, const T* gy,
                                         const std::int64_t* argmax, T* gx, Pool2dGeometry g) {
  QGRAD_GRID_STRIDE(i, total) {
    const std::int64_t ix = i % g.iw, iy = (i / g.iw) % g.ih, p = i / (g.iw * g.ih);
    const std::int64_t self = iy * g.iw + ix, base = p * g.oh * g.ow;
    T sum = 0;
    for_each_window(iy, g.kh, g.sh, g.ph, g.dh, g.oh, [&](std::int64_t oy) {
      for_each_window(ix, g.kw, g.sw, g.pw, g.dw, g.ow, [&](std::int64_t ox) {
        const std::int64_t o = base + oy * g.ow + ox;
        if (argmax[o] == self) sum += gy[o];
      });
    });
    gx[i] = sum;
  }
}

Tensor max_pool2d_cuda(const Tensor& x, const Tensor& out, const Pool2dGeometry& g,
                       bool keep_workspace) {
  Tensor argmax = keep_workspace
                      ? empty(out.shape(), TensorOptions().dtype(kInt64).device(out.device()))
                      : Tensor();
  std::int64_t* pa = keep_workspace ? argmax.data_ptr<std::int64_t>() : nullptr;
  QGRAD_DISPATCH_FLOAT(x.dtype(), "max_pool2d", [&] {
    using T = scalar_t;
    launch("max_pool2d", out, out.numel(), max_pool_kernel<T>, x.data_ptr<T>(), out.data_ptr<T>(),
           pa, g);
  });
  return argmax;
}

void max_pool2d_backward_cuda(const Tensor& gy, const Tensor& workspace, const Tensor& gx,
                              const Pool2dGeometry& g) {
  QGRAD_CHECK(workspace.dtype() == kInt64 && workspace.device() == gy.device() &&
                  workspace.numel() == gy.numel(),
              ValueError, "max_pool2d backward: expected the int64 argmax of the CUDA forward (",
              gy.numel(), " elements on ", gy.device(), "), got ", dtype_name(workspace.dtype()),
              " of shape ", workspace.shape(), " on ", workspace.device());
  QGRAD_DISPATCH_FLOAT(gx.dtype(), "max_pool2d backward", [&] {
    using T = scalar_t;
    launch("max_pool2d backward", gx, gx.numel(), max_pool_backward_kernel<T>, gy.data_ptr<T>(),
           workspace.data_ptr<std::int64_t>(), gx.data_ptr<T>(), g);
  });
}

// ---- average pooling ----

// Window of output o clipped to the input, and its length clipped to the padded input only
// (as avg_window() on the CPU).
struct AvgWindow {
  std::int64_t begin, end, padded;
};
__device__ AvgWindow avg_window(std::int64_t o, std::int64_t k, std::int64_t s, std::int64_t p,
                                std::int64_t in) {
  const std::int64_t start = o * s - p;
  const std::int64_t end = min(start + k, in + p);
  return {max(start, std::int64_t(0)), min(end, in), end - start};
}

__device__ std::int64_t avg_divisor(const AvgWindow& y, const AvgWindow& x, bool count_include_pad,
                                    std::int64_t divisor_override) {
  if (divisor_override > 0) return divisor_override;
  if (count_include_pad) return y.padded * x.padded;
  return (y.end - y.begin) * (x.end - x.begin);
}

template <typename T>
__global__ void avg_pool_kernel(std::int64_t total, const T* x, T* out, Pool2dGeometry g,
                                bool count_include_pad, std::int64_t divisor_override) {
  QGRAD_GRID_STRIDE(i, total) {
    const std::int64_t ox = i % g.ow, oy = (i / g.ow) % g.oh, p = i / (g.ow * g.oh);
    const T* xp = x + p * g.ih * g.iw;
    const AvgWindow wy = avg_window(oy, g.kh, g.sh, g.ph, g.ih);
    const AvgWindow wx = avg_window(ox, g.kw, g.sw, g.pw, g.iw);
    T sum = 0;
    for (std::int64_t y = wy.begin; y < wy.end; ++y)
      for (std::int64_t xx = wx.begin; xx < wx.end; ++xx) sum += xp[y * g.iw + xx];
    const std::int64_t div = avg_divisor(wy, wx, count_include_pad, divisor_override);
    out[i] = div > 0 ? sum / static_cast<T>(div) : T(0);
  }
}

template <typename T>
__global__ void avg_pool_backward_kernel(std::int64_t total, const T* gy, T* gx, Pool2dGeometry g,
                                         bool count_include_pad, std::int64_t divisor_override) {
  QGRAD_GRID_STRIDE(i, total) {
    const std::int64_t ix = i % g.iw, iy = (i / g.iw) % g.ih, p = i / (g.iw * g.ih);
    const T* gp = gy + p * g.oh * g.ow;
    T sum = 0;
    // A window covers [o*s - p, o*s - p + k) clipped to the input: the taps of a dense window.
    for_each_window(iy, g.kh, g.sh, g.ph, 1, g.oh, [&](std::int64_t oy) {
      const AvgWindow wy = avg_window(oy, g.kh, g.sh, g.ph, g.ih);
      for_each_window(ix, g.kw, g.sw, g.pw, 1, g.ow, [&](std::int64_t ox) {
        const AvgWindow wx = avg_window(ox, g.kw, g.sw, g.pw, g.iw);
        const std::int64_t div = avg_divisor(wy, wx, count_include_pad, divisor_override);
        if (div > 0) sum += gp[oy * g.ow + ox] / static_cast<T>(div);
      });
    });
    gx[i] = sum;
  }
}

void check_dense(const char* op, const Pool2dGeometry& g) {
  QGRAD_CHECK(g.dh == 1 && g.dw == 1, ValueError, op, ": average pooling has no dilation, got (",
              g.dh, ", ", g.dw, ")");
}

void avg_pool2d_cuda(const Tensor& x, const Tensor& out, const Pool2dGeometry& g,
                     bool count_include_pad, std::int64_t divisor_override) {
  check_dense("avg_pool2d", g);
  QGRAD_DISPATCH_FLOAT(x.dtype(), "avg_pool2d", [&] {
    using T = scalar_t;
    launch("avg_pool2d", out, out.numel(), avg_pool_kernel<T>, x.data_ptr<T>(), out.data_ptr<T>(),
           g, count_include_pad, divisor_override);
  });
}

void avg_pool2d_backward_cuda(const Tensor& gy, const Tensor& gx, const Pool2dGeometry& g,
                              bool count_include_pad, std::int64_t divisor_override) {
  check_dense("avg_pool2d backward", g);
  QGRAD_DISPATCH_FLOAT(gx.dtype(), "avg_pool2d backward", [&] {
    using T = scalar_t;
    launch("avg_pool2d backward", gx, gx.numel(), avg_pool_backward_kernel<T>, gy.data_ptr<T>(),
           gx.data_ptr<T>(), g, count_include_pad, divisor_override);
  });
}

// ---- adaptive average pooling ----

// Output cell o of n over length L covers [floor(o*L/n), ceil((o+1)*L/n)).
__device__ std::int64_t adaptive_begin(std::int64_t o, std::int64_t n, std::int64_t len) {
  return (o * len) / n;
}
__device__ std::int64_t adaptive_end(std::int64_t o, std::int64_t n, std::int64_t len) {
  return ((o + 1) * len + n - 1) / n;
}

struct AdaptiveSizes {
  std::int64_t ih, iw, oh, ow;
};

template <typename T>
__global__ void adaptive_avg_kernel(std::int64_t total, const T* x, T* out, AdaptiveSizes s) {
  QGRAD_GRID_STRIDE(i, total) {
    const std::int64_t ox = i % s.ow, oy = (i / s.ow) % s.oh, p = i / (s.ow * s.oh);
    const T* xp = x + p * s.ih * s.iw;
    const std::int64_t y0 = adaptive_begin(oy, s.oh, s.ih), y1 = adaptive_end(oy, s.oh, s.ih);
    const std::int64_t x0 = adaptive_begin(ox, s.ow, s.iw), x1 = adaptive_end(ox, s.ow, s.iw);
    T sum = 0;
    for (std::int64_t y = y0; y < y1; ++y)
      for (std::int64_t xx = x0; xx < x1; ++xx) sum += xp[y * s.iw + xx];
    out[i] = sum / static_cast<T>((y1 - y0) * (x1 - x0));
  }
}

template <typename T>
__global__ void adaptive_avg_backward_kernel(std::int64_t total, const T* gy, T* gx,
                                             AdaptiveSizes s) {
  QGRAD_GRID_STRIDE(i, total) {
    const std::int64_t ix = i % s.iw, iy = (i / s.iw) % s.ih, p = i / (s.iw * s.ih);
    const T* gp = gy + p * s.oh * s.ow;
    // The cells holding iy: floor(iy*oh/ih) <= oy <= ceil((iy+1)*oh/ih) - 1 (checked again).
    const std::int64_t oy0 = (iy * s.oh) / s.ih, oy1 = ((iy + 1) * s.oh + s.ih - 1) / s.ih;
    const std::int64_t ox0 = (ix * s.ow) / s.iw, ox1 = ((ix + 1) * s.ow + s.iw - 1) / s.iw;
    T sum = 0;
    for (std::int64_t oy = oy0; oy < min(oy1, s.oh); ++oy) {
      const std::int64_t y0 = adaptive_begin(oy, s.oh, s.ih), y1 = adaptive_end(oy, s.oh, s.ih);
      if (iy < y0 || iy >= y1) continue;
      for (std::int64_t ox = ox0; ox < min(ox1, s.ow); ++ox) {
        const std::int64_t x0 = adaptive_begin(ox, s.ow, s.iw), x1 = adaptive_end(ox, s.ow, s.iw);
        if (ix < x0 || ix >= x1) continue;
        sum += gp[oy * s.ow + ox] / static_cast<T>((y1 - y0) * (x1 - x0));
      }
    }
    gx[i] = sum;
  }
}

void adaptive_avg_pool2d_cuda(const Tensor& x, const Tensor& out) {
  const AdaptiveSizes s{x.size(2), x.size(3), out.size(2), out.size(3)};
  QGRAD_DISPATCH_FLOAT(x.dtype(), "adaptive_avg_pool2d", [&] {
    using T = scalar_t;
    launch("adaptive_avg_pool2d", out, out.numel(), adaptive_avg_kernel<T>, x.data_ptr<T>(),
           out.data_ptr<T>(), s);
  });
}

void adaptive_avg_pool2d_backward_cuda(const Tensor& gy, const Tensor& gx) {
  const AdaptiveSizes s{gx.size(2), gx.size(3), gy.size(2), gy.size(3)};
  QGRAD_DISPATCH_FLOAT(gx.dtype(), "adaptive_avg_pool2d backward", [&] {
    using T = scalar_t;
    launch("adaptive_avg_pool2d backward", gx, gx.numel(), adaptive_avg_backward_kernel<T>,
           gy.data_ptr<T>(), gx.data_ptr<T>(), s);
  });
}

#undef QGRAD_GRID_STRIDE

}  // namespace

void register_pool_cuda_kernels(KernelRegistry& r) {
  r.table(kMaxPool2dKernels).define(DeviceType::CUDA, &max_pool2d_cuda, kFloatingDTypes);
  r.table(kMaxPool2dBackwardKernels)
      .define(DeviceType::CUDA, &max_pool2d_backward_cuda, kFloatingDTypes);
  r.table(kAvgPool2dKernels).define(DeviceType::CUDA, &avg_pool2d_cuda, kFloatingDTypes);
  r.table(kAvgPool2dBackwardKernels)
      .define(DeviceType::CUDA, &avg_pool2d_backward_cuda, kFloatingDTypes);
  r.table(kAdaptiveAvgPool2dKernels)
      .define(DeviceType::CUDA, &adaptive_avg_pool2d_cuda, kFloatingDTypes);
  r.table(kAdaptiveAvgPool2dBackwardKernels)
      .define(DeviceType::CUDA, &adaptive_avg_pool2d_backward_cuda, kFloatingDTypes);
}

}  // namespace qgrad
