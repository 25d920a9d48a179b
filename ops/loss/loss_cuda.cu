// CUDA loss kernels. Cross entropy gives one thread block to each position (sample n, spatial
// s): block reductions of the max, of sum(exp(x - max)) in double and, with label smoothing,
// of sum(w_c (x_c - max)), then loss_elem.h's formula; nll is one thread per position. The
// backward recomputes the softmax from the saved log-sum-exp, one block per position. The
// totals (loss sum, weight sum; the mse sum) are reduced on the device in a fixed order
// (per-block partials, then one block) into a float64 tensor that stays there: no kernel here
// makes the host wait. The kernels check the class targets themselves: a target that is neither
// a class nor ignore_index gives NaN (it is never used as an index) and is reported at the host's
// next wait (core/cuda_deferred_error.h). Squared error and its gradient run loss_elem.h's
// functors through cuda::map.
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>

#include "core/allocator.h"
#include "core/cuda_block_reduce.cuh"
#include "core/cuda_check.h"
#include "core/cuda_deferred_error.cuh"
#include "core/cuda_map.cuh"
#include "core/cuda_stream.h"
#include "core/vec_math.h"
#include "ops/loss/loss_elem.h"
#include "ops/loss/loss_kernels.h"
#include "ops/softmax/dim_view.h"

namespace qgrad {

namespace {

using cuda::kRowThreads;

// Two running sums reduced together (loss and weight totals). No member initialisers: a
// __shared__ array needs a trivially constructible type.
struct Pair {
  double a, b;
  __device__ Pair operator+(const Pair& o) const { return {a + o.a, b + o.b}; }
};

// Everything the class-loss kernels need, as a kernel argument.
template <typename T>
struct ClassGeom {
  const T* x;
  DimView v;  // input around dim 1: outer N, size C, inner S
  const std::int64_t* tgt;
  const T* w;  // null: all weights 1
  std::int64_t ignore;
  double eps;
  CudaDeferredError* error;  // where a bad target is reported
  DeferredErrorOp op;
  // Whether target t may index a class (ignore_index is checked separately, before).
  __device__ bool is_class(std::int64_t t) const { return t >= 0 && t < v.size; }
  // Reports a target that is neither a class nor ignore_index (the forward kernels call it).
  __device__ void report(std::int64_t pos, std::int64_t t) const {
    cuda::report_class_target(error, op, pos, t, v.size, ignore);
  }
  __device__ const T* row(std::int64_t pos) const {
    return x + (pos / v.inner) * v.outer_stride + (pos % v.inner) * v.inner_stride;
  }
  __device__ double weight_of(std::int64_t t) const { return w ? static_cast<double>(w[t]) : 1.0; }
  // sum_c w_c over the block (C when unweighted); every thread of the block must call it.
  __device__ double weight_total(double* shared) const {
    if (!w) return static_cast<double>(v.size);
    double s = 0;
    for (std::int64_t c = threadIdx.x; c < v.size; c += blockDim.x) s += static_cast<double>(w[c]);
    return cuda::block_reduce(s, shared, cuda::SumOp{});
  }
};

template <typename T>
__global__ void cross_entropy_kernel(ClassGeom<T> k, double* losses, double* lse) {
  __shared__ double shared[kRowThreads];
  const std::int64_t P = k.v.outer * k.v.inner, C = k.v.size, cs = k.v.size_stride;
  const bool smooth = k.eps > 0;
  const double w_all = smooth ? k.weight_total(shared) : 0.0;
  for (std::int64_t pos = blockIdx.x; pos < P; pos += gridDim.x) {
    const std::int64_t t = k.tgt[pos];
    if (t == k.ignore) {  // uniform over the block: no thread reaches a barrier alone
      if (threadIdx.x == 0) losses[pos] = lse[pos] = 0;
      continue;
    }
    if (!k.is_class(t)) {  // uniform too
      if (threadIdx.x == 0) {
        losses[pos] = lse[pos] = std::numeric_limits<double>::quiet_NaN();
        k.report(pos, t);
      }
      continue;
    }
    const T* xr = k.row(pos);
    T m = -std::numeric_limits<T>::infinity();
    for (std::int64_t c = threadIdx.x; c < C; c += blockDim.x) m = xr[c * cs] > m ? xr[c * cs] : m;
    m = static_cast<T>(cuda::block_reduce(static_cast<double>(m), shared, cuda::MaxOp{}));
    double s = 0, sw = 0;
    for (std::int64_t c = threadIdx.x; c < C; c += blockDim.x) {
      const T d = static_cast<T>(xr[c * cs] - m);
      s += static_cast<double>(vec_math::exp_nonpositive(d));
      if (smooth) sw += static_cast<double>(k.w ? static_cast<T>(k.w[c] * d) : d);
    }
    s = cuda::block_reduce(s, shared, cuda::SumOp{});
    if (smooth) sw = cuda::block_reduce(sw, shared, cuda::SumOp{});
    if (threadIdx.x == 0) {
      const double md = static_cast<double>(m), log_s = ::log(s);
      lse[pos] = md + log_s;
      losses[pos] = loss_elem::cross_entropy(static_cast<double>(xr[t * cs]), md, log_s, sw,
                                             k.weight_of(t), k.eps, static_cast<double>(C), w_all);
    }
  }
}

template <typename T>
struct NllForward {
  ClassGeom<T> k;
  double* losses;
  __device__ void operator()(std::int64_t pos) const {
    const std::int64_t t = k.tgt[pos];
    if (t == k.ignore) {
      losses[pos] = 0.0;
    } else if (!k.is_class(t)) {
      losses[pos] = std::numeric_limits<double>::quiet_NaN();
      k.report(pos, t);
    } else {
      losses[pos] = -k.weight_of(t) * static_cast<double>(k.row(pos)[t * k.v.size_stride]);
    }
  }
};

// Per-block partial sums of (loss, weight) over the non-ignored positions.
template <typename T>
__global__ void class_totals_kernel(ClassGeom<T> k, const double* losses, Pair* partial) {
  __shared__ Pair shared[kRowThreads];
  const std::int64_t P = k.v.outer * k.v.inner;
  Pair acc{0, 0};
  for (std::int64_t pos = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; pos < P;
       pos += static_cast<std::int64_t>(blockDim.x) * gridDim.x) {
    const std::int64_t t = k.tgt[pos];
    if (t == k.ignore) continue;
    acc.a += losses[pos];  // NaN for a bad target, which then poisons the mean
    acc.b += k.is_class(t) ? k.weight_of(t) : std::numeric_limits<double>::quiet_NaN();
  }
  acc = cuda::block_reduce(acc, shared, cuda::SumOp{});
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

// Per-block partial sums of (a - b)^2 (a, b contiguous), in double.
template <typename T>
__global__ void mse_partial_kernel(const T* a, const T* b, std::int64_t n, Pair* partial) {
  __shared__ Pair shared[kRowThreads];
  Pair acc{0, 0};
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(blockDim.x) * gridDim.x)
    acc.a += static_cast<double>(loss_elem::SquaredDiff<T>{}(a[i], b[i]));
  acc = cuda::block_reduce(acc, shared, cuda::SumOp{});
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

// Adds the `n` partials in one block into out[0] (.a) and, when `count` is 2, out[1] (.b).
__global__ void sum_partials_kernel(const Pair* partial, int n, double* out, int count) {
  __shared__ Pair shared[kRowThreads];
  Pair acc{0, 0};
  for (int i = static_cast<int>(threadIdx.x); i < n; i += blockDim.x) acc = acc + partial[i];
  acc = cuda::block_reduce(acc, shared, cuda::SumOp{});
  if (threadIdx.x == 0) {
    out[0] = acc.a;
    if (count == 2) out[1] = acc.b;
  }
}

constexpr int kMaxPartials = 1024;

int partial_blocks(std::int64_t n) {
  const std::int64_t b = (n + kRowThreads - 1) / kRowThreads;
  return static_cast<int>(b < 1 ? 1 : (b > kMaxPartials ? kMaxPartials : b));
}

// Runs `launch(blocks, partial)` (which writes one Pair per block) and reduces the partials on
// the device into out[0] (and out[1] when `count` is 2), a device buffer. No wait.
template <typename Launch>
void device_total(const char* op, Device device, std::int64_t n, double* out, int count,
                  const Launch& launch) {
  const int blocks = partial_blocks(n);
  // Freed at the end of this call and reused only by later work on the same stream.
  const DataPtr buf = allocate(sizeof(Pair) * static_cast<std::size_t>(blocks), device);
  Pair* partial = static_cast<Pair*>(buf.get());
  cudaStream_t stream = cuda_stream(device.index);
  launch(blocks, partial);
  QGRAD_CUDA_CHECK(cudaGetLastError(), op, "partial sums over ", n, " elements");
  sum_partials_kernel<<<1, kRowThreads, 0, stream>>>(partial, blocks, out, count);
  QGRAD_CUDA_CHECK(cudaGetLastError(), op, "total of ", blocks, " partial sums");
}

template <typename T>
ClassGeom<T> make_geom(const Tensor& input, Tensor& storage, const Tensor& target,
                       const Tensor& weight, const ClassLossParams& p) {
  ClassGeom<T> k;
  k.v = dim_view_or_copy(input, 1, storage);
  k.x = static_cast<const T*>(storage.raw_data());
  k.tgt = static_cast<const std::int64_t*>(target.raw_data());
  k.w = weight.defined() ? static_cast<const T*>(weight.raw_data()) : nullptr;
  k.ignore = p.ignore_index;
  k.eps = p.label_smoothing;
  k.error = cuda_deferred_error_slot(input.device().index);
  k.op = p.from_logits ? DeferredErrorOp::CrossEntropy : DeferredErrorOp::NllLoss;
  return k;
}

template <typename T>
void class_loss_typed(const char* op, const Tensor& input, const Tensor& target,
                      const Tensor& weight, const ClassLossParams& p, const Tensor& losses,
                      const Tensor& lse, const Tensor& totals) {
  const Device device = input.device();
  const CudaDeviceGuard guard(device.index);
  Tensor xs;
  const ClassGeom<T> k = make_geom<T>(input, xs, target, weight, p);
  const std::int64_t P = k.v.outer * k.v.inner;
  auto* pt = static_cast<double*>(totals.raw_data());
  if (P == 0) {
    QGRAD_CUDA_CHECK(cudaMemsetAsync(pt, 0, 2 * sizeof(double), cuda_stream(device.index)), op,
                     "zero totals");
    return;
  }
  cudaStream_t stream = cuda_stream(device.index);
  auto* pl = static_cast<double*>(losses.raw_data());
  if (p.from_logits) {
    cross_entropy_kernel<T><<<cuda::row_blocks(P), kRowThreads, 0, stream>>>(
        k, pl, static_cast<double*>(lse.raw_data()));
    QGRAD_CUDA_CHECK(cudaGetLastError(), op, "kernel launch, input shape ", input.shape());
  } else {
    cuda::for_each_index(op, device, P, NllForward<T>{k, pl});
  }
  device_total(op, device, P, pt, 2, [&](int blocks, Pair* partial) {
    class_totals_kernel<T><<<blocks, kRowThreads, 0, stream>>>(k, pl, partial);
  });
}

// The gradient of one position (block per position), grad_in[n, c, s] at class pitch S.
template <typename T>
__global__ void cross_entropy_backward_kernel(ClassGeom<T> k, const double* lse, const T* g,
                                              bool shared_g, const double* factor_ptr, T* gx) {
  __shared__ double shared[kRowThreads];
  const std::int64_t S = k.v.inner, C = k.v.size, cs = k.v.size_stride, P = k.v.outer * S;
  const double eps = k.eps, eps_c = eps / static_cast<double>(C);
  const double w_all = eps > 0 ? k.weight_total(shared) : 0.0;
  const double factor = factor_ptr ? *factor_ptr : 1.0;
  for (std::int64_t pos = blockIdx.x; pos < P; pos += gridDim.x) {
    const std::int64_t t = k.tgt[pos];
    T* gr = gx + (pos / S) * C * S + pos % S;
    if (t == k.ignore || !k.is_class(t)) {  // a bad target (reported by the forward): NaN
      const T v = t == k.ignore ? T(0) : std::numeric_limits<T>::quiet_NaN();
      for (std::int64_t c = threadIdx.x; c < C; c += blockDim.x) gr[c * S] = v;
      continue;
    }
    const double sc = factor * static_cast<double>(shared_g ? g[0] : g[pos]);
    const double wt = k.weight_of(t);
    const T* xr = k.row(pos);
    const double l = lse[pos];
    // d loss / d x_c = sc * (softmax_c * A - a_c), a_c = (1-eps) wt [c == t] + eps/C w_c.
    const T coef_p = static_cast<T>(sc * ((1.0 - eps) * wt + eps_c * w_all));
    const T coef_w = static_cast<T>(sc * eps_c);
    const T target_term = static_cast<T>(sc * (1.0 - eps) * wt);
    for (std::int64_t c = threadIdx.x; c < C; c += blockDim.x) {
      const T prob = vec_math::exp_nonpositive(static_cast<T>(static_cast<double>(xr[c * cs]) - l));
      T v = coef_p * prob - coef_w * (k.w ? k.w[c] : T(1));
      if (c == t) v -= target_term;
      gr[c * S] = v;
    }
  }
}

template <typename T>
struct NllBackward {
  ClassGeom<T> k;
  const T* g;
  bool shared_g;
  const double* factor;  // null: 1
  T* gx;                 // zero-filled by the caller
  __device__ void operator()(std::int64_t pos) const {
    const std::int64_t t = k.tgt[pos];
    if (t == k.ignore) return;
    const std::int64_t S = k.v.inner;
    if (!k.is_class(t)) {  // a bad target (reported by the forward): NaN over its row
      for (std::int64_t c = 0; c < k.v.size; ++c)
        gx[(pos / S) * k.v.size * S + pos % S + c * S] = std::numeric_limits<T>::quiet_NaN();
      return;
    }
    const double sc = (factor ? *factor : 1.0) * static_cast<double>(shared_g ? g[0] : g[pos]);
    gx[(pos / S) * k.v.size * S + pos % S + t * S] = static_cast<T>(-sc * k.weight_of(t));
  }
};

template <typename T>
void class_loss_backward_typed(const char* op, const Tensor& input, const Tensor& target,
                               const Tensor& weight, const Tensor& lse, const ClassLossParams& p,
                               const Tensor& g, const double* factor, const Tensor& grad_in) {
  QGRAD_CHECK(grad_in.is_contiguous() && g.is_contiguous(), Error, op,
              ": gradient buffers must be contiguous");
  Tensor xs;
  const ClassGeom<T> k = make_geom<T>(input, xs, target, weight, p);
  const std::int64_t P = k.v.outer * k.v.inner;
  if (P == 0) return;
  const Device device = input.device();
  const CudaDeviceGuard guard(device.index);
  const T* pg = static_cast<const T*>(g.raw_data());
  const bool shared_g = g.numel() == 1;
  T* gx = static_cast<T*>(grad_in.raw_data());
  if (p.from_logits) {
    cross_entropy_backward_kernel<T>
        <<<cuda::row_blocks(P), kRowThreads, 0, cuda_stream(device.index)>>>(
            k, static_cast<const double*>(lse.raw_data()), pg, shared_g, factor, gx);
    QGRAD_CUDA_CHECK(cudaGetLastError(), op, "backward kernel launch, input shape ", input.shape());
  } else {
    cuda::for_each_index(op, device, P, NllBackward<T>{k, pg, shared_g, factor, gx});
  }
}

void class_loss_cuda(const Tensor& input, const Tensor& target, const Tensor& weight,
                     const ClassLossParams& p, const Tensor& losses, const Tensor& lse,
                     const Tensor& totals) {
  const char* op = p.from_logits ? "cross_entropy" : "nll_loss";
  QGRAD_DISPATCH_FLOAT(input.dtype(), op, [&] {
    class_loss_typed<scalar_t>(op, input, target, weight, p, losses, lse, totals);
  });
}

void class_loss_backward_cuda(const Tensor& input, const Tensor& target, const Tensor& weight,
                              const Tensor& lse, const ClassLossParams& p, const Tensor& g,
                              const Tensor& factor, const Tensor& grad_in) {
  if (grad_in.numel() == 0) return;
  const char* op = p.from_logits ? "cross_entropy backward" : "nll_loss backward";
  const double* f = factor.defined() ? static_cast<const double*>(factor.raw_data()) : nullptr;
  QGRAD_DISPATCH_FLOAT(input.dtype(), op, [&] {
    class_loss_backward_typed<scalar_t>(op, input, target, weight, lse, p, g, f, grad_in);
  });
}

void mse_cuda(const Tensor& a, const Tensor& b, const Tensor& out, const Tensor& total) {
  QGRAD_DISPATCH_FLOAT(a.dtype(), "mse_loss", [&] {
    using T = scalar_t;
    if (out.defined()) {
      cuda::map<T, T, T>("mse_loss", loss_elem::SquaredDiff<T>{}, out, a, b);
      return;
    }
    const CudaDeviceGuard guard(a.device().index);
    cudaStream_t stream = cuda_stream(a.device().index);
    auto* pt = static_cast<double*>(total.raw_data());
    const std::int64_t n = a.numel();
    if (n == 0) {
      QGRAD_CUDA_CHECK(cudaMemsetAsync(pt, 0, sizeof(double), stream), "mse_loss", "zero total");
      return;
    }
    const Tensor ac = a.contiguous(), bc = b.contiguous();
    device_total("mse_loss", a.device(), n, pt, 1, [&](int blocks, Pair* partial) {
      mse_partial_kernel<T><<<blocks, kRowThreads, 0, stream>>>(
          static_cast<const T*>(ac.raw_data()), static_cast<const T*>(bc.raw_data()), n, partial);
    });
  });
}

void mse_backward_cuda(const Tensor& a, const Tensor& b, const Tensor& g, double factor,
                       const Tensor& grad_a) {
  if (grad_a.numel() == 0) return;
  QGRAD_DISPATCH_FLOAT(a.dtype(), "mse_loss backward", [&] {
    using T = scalar_t;
    cuda::map<T, T, T, T>("mse_loss backward", loss_elem::MseGrad<T>{static_cast<T>(factor)},
                          grad_a, a, b, g);
  });
}

}  // namespace

void register_loss_cuda_kernels(KernelRegistry& r) {
  r.table(kClassLossKernels).define(DeviceType::CUDA, &class_loss_cuda, kFloatingDTypes);
  r.table(kClassLossBackwardKernels)
      .define(DeviceType::CUDA, &class_loss_backward_cuda, kFloatingDTypes);
  r.table(kMseLossKernels).define(DeviceType::CUDA, &mse_cuda, kFloatingDTypes);
  r.table(kMseLossBackwardKernels).define(DeviceType::CUDA, &mse_backward_cuda, kFloatingDTypes);
}

}  // namespace qgrad
