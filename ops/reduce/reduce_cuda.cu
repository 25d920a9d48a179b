// CUDA reductions: one block per output element (grid-stride over outputs), its threads folding
// the reduced elements in row-major order of the reduced dims and combining through shared
// memory. The fold rules are reduce_elem.h's (sums in double or wrapping uint64, NaN-propagating
// max/min, first-extreme argmax/argmin), so results match the CPU's exactly for max, min and the
// arg reductions and to rounding for sums (another summation order). var is two passes (the mean
// in double, then the squared deviations), as on the CPU.
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>

#include "core/core_kernels.h"
#include "core/cuda_check.h"
#include "core/cuda_stream.h"
#include "core/factory.h"
#include "ops/reduce/reduce_elem.h"
#include "ops/reduce/reduce_kernels.h"

namespace qgrad {

namespace {

constexpr int kMaxReduceDims = 16;  // dims of one group (kept or reduced); tensors have fewer
constexpr int kThreads = 256;

// The element offset of a row-major index over some of x's dims.
struct DimGroup {
  int nd = 0;
  std::int64_t sizes[kMaxReduceDims] = {};
  std::int64_t strides[kMaxReduceDims] = {};

  __device__ std::int64_t offset(std::int64_t linear) const {
    std::int64_t off = 0;
    for (int d = nd - 1; d >= 0; --d) {
      off += (linear % sizes[d]) * strides[d];
      linear /= sizes[d];
    }
    return off;
  }
};

struct Geometry {
  DimGroup kept, reduced;
  std::int64_t K = 1, R = 1;  // number of outputs, elements folded into each
};

Geometry make_geometry(const char* op, const Tensor& x, const std::vector<bool>& reduced) {
  QGRAD_CHECK(static_cast<std::int64_t>(reduced.size()) == x.dim(), ValueError, op, ": got ",
              reduced.size(), " dim flags for a ", x.dim(), "-d input");
  QGRAD_CHECK(x.dim() <= kMaxReduceDims, ShapeError, op, ": the CUDA reduction takes at most ",
              kMaxReduceDims, " dims, got shape ", x.shape());
  Geometry g;
  for (std::int64_t d = 0; d < x.dim(); ++d) {
    DimGroup& grp = reduced[d] ? g.reduced : g.kept;
    grp.sizes[grp.nd] = x.shape()[d];
    grp.strides[grp.nd] = x.strides()[d];
    ++grp.nd;
    (reduced[d] ? g.R : g.K) *= x.shape()[d];
  }
  return g;
}

// Sum: the accumulator of reduce_elem.h, stored as R.
template <typename T, typename R>
struct SumFold {
  using Acc = reduce_elem::sum_acc_t<T>;
  __device__ Acc identity() const { return Acc(0); }
  __device__ void fold(Acc& a, T v, std::int64_t) const { a += static_cast<Acc>(v); }
  __device__ void combine(Acc& a, const Acc& b) const { a += b; }
  __device__ void store(const Acc& a, std::int64_t k) const { out[k] = static_cast<R>(a); }
  R* out;
};

template <typename T, bool IsMax>
struct ExtremeFold {
  using Acc = T;
  using Rule = reduce_elem::Extreme<T, IsMax>;
  __device__ Acc identity() const { return Rule::identity(); }
  __device__ void fold(Acc& a, T v, std::int64_t) const { a = Rule::takes(v, a) ? v : a; }
  __device__ void combine(Acc& a, const Acc& b) const { a = Rule::takes(b, a) ? b : a; }
  __device__ void store(const Acc& a, std::int64_t k) const { out[k] = a; }
  T* out;
};

template <typename T>
struct ArgAcc {
  T best;
  std::int64_t idx;  // -1: nothing folded yet
};
template <typename T, bool IsMax>
struct ArgFold {
  using Acc = ArgAcc<T>;
  using Rule = reduce_elem::Extreme<T, IsMax>;
  __device__ Acc identity() const { return {Rule::identity(), -1}; }
  __device__ void fold(Acc& a, T v, std::int64_t r) const {
    if (a.idx < 0 || Rule::beats(v, r, a.best, a.idx)) a = {v, r};
  }
  __device__ void combine(Acc& a, const Acc& b) const {
    if (b.idx >= 0 && (a.idx < 0 || Rule::beats(b.best, b.idx, a.best, a.idx))) a = b;
  }
  __device__ void store(const Acc& a, std::int64_t k) const {
    out[k] = a.idx;
    if (values) values[k] = a.best;
  }
  std::int64_t* out;
  T* values;
};

// Squared deviations from each output's mean (its sum / n), divided by `denom` (var's second
// pass).
template <typename T>
struct SqDevFold {
  using Acc = double;
  __device__ Acc identity() const { return 0.0; }
  __device__ void fold(Acc& a, T v, std::int64_t) const {
    const double d = static_cast<double>(v) - centre_now;
    a += d * d;
  }
  __device__ void combine(Acc& a, const Acc& b) const { a += b; }
  __device__ void store(const Acc& a, std::int64_t k) const { out[k] = static_cast<T>(a / denom); }
  T* out;
  const double* sums;
  double n;
  double denom;
  double centre_now = 0;  // set per output by the kernel
};

template <typename Fold>
__device__ void set_output(Fold&, std::int64_t) {}
template <typename T>
__device__ void set_output(SqDevFold<T>& f, std::int64_t k) {
  f.centre_now = f.sums[k] / f.n;
}

template <typename T, typename Fold>
__global__ void reduce_kernel(const T* x, Geometry g, Fold fold) {
  using Acc = typename Fold::Acc;
  __shared__ Acc shared[kThreads];
  for (std::int64_t k = blockIdx.x; k < g.K; k += gridDim.x) {
    set_output(fold, k);
    const T* base = x + g.kept.offset(k);
    Acc a = fold.identity();
    for (std::int64_t r = threadIdx.x; r < g.R; r += blockDim.x)
      fold.fold(a, base[g.reduced.offset(r)], r);
    shared[threadIdx.x] = a;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
      if (static_cast<int>(threadIdx.x) < w)
        fold.combine(shared[threadIdx.x], shared[threadIdx.x + w]);
      __syncthreads();
    }
    if (threadIdx.x == 0) fold.store(shared[0], k);
    __syncthreads();  // shared[] is reused by the next output
  }
}

template <typename T, typename Fold>
void launch(const char* op, const Tensor& x, const Geometry& g, const Fold& fold) {
  const int blocks = static_cast<int>(std::min<std::int64_t>(g.K, 1 << 16));
  const CudaDeviceGuard guard(x.device().index);
  reduce_kernel<T><<<blocks, kThreads, 0, cuda_stream(x.device().index)>>>(
      static_cast<const T*>(x.raw_data()), g, fold);
  QGRAD_CUDA_CHECK(cudaGetLastError(), op, "reduction of shape ", x.shape());
}

void reduce_cuda(ReduceOp op, const Tensor& x, const std::vector<bool>& reduced, const Tensor& out,
                 const Tensor& values) {
  const Geometry g = make_geometry("reduce", x, reduced);
  const bool is_arg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
  QGRAD_CHECK(out.is_contiguous() && out.numel() == g.K, ValueError,
              "reduce: output must be contiguous with ", g.K, " elements, got shape ", out.shape());
  QGRAD_CHECK(!values.defined() || (is_arg && values.is_contiguous() && values.numel() == g.K &&
                                    values.dtype() == x.dtype()),
              ValueError, "reduce: values output only for argmax/argmin, contiguous ",
              dtype_name(x.dtype()), " with ", g.K, " elements");
  if (g.K == 0) return;
  if (g.R == 0) {
    QGRAD_CHECK(op == ReduceOp::Sum, ValueError,
                "reduce: max/min/argmax/argmin over an empty range (input shape ", x.shape(), ")");
    Tensor(out).zero_();
    return;
  }
  QGRAD_DISPATCH_ALL(x.dtype(), "reduce", [&] {
    using T = scalar_t;
    switch (op) {
      case ReduceOp::Sum: {
        using R = std::conditional_t<std::is_floating_point_v<T>, T, std::int64_t>;
        QGRAD_CHECK(out.dtype() == dtype_v<R>, DTypeError, "reduce: sum of ", dtype_name(x.dtype()),
                    " writes ", dtype_name(dtype_v<R>), ", got ", dtype_name(out.dtype()));
        return launch<T>("sum", x, g, SumFold<T, R>{static_cast<R*>(out.raw_data())});
      }
      case ReduceOp::Max:
      case ReduceOp::Min: {
        QGRAD_CHECK(out.dtype() == x.dtype(), DTypeError, "reduce: max/min output must be ",
                    dtype_name(x.dtype()), ", got ", dtype_name(out.dtype()));
        T* o = static_cast<T*>(out.raw_data());
        if (op == ReduceOp::Max) return launch<T>("amax", x, g, ExtremeFold<T, true>{o});
        return launch<T>("amin", x, g, ExtremeFold<T, false>{o});
      }
      case ReduceOp::ArgMax:
      case ReduceOp::ArgMin: {
        QGRAD_CHECK(out.dtype() == kInt64, DTypeError,
                    "reduce: argmax/argmin output must be int64, got ", dtype_name(out.dtype()));
        auto* o = static_cast<std::int64_t*>(out.raw_data());
        T* v = values.defined() ? static_cast<T*>(values.raw_data()) : nullptr;
        if (op == ReduceOp::ArgMax) return launch<T>("argmax", x, g, ArgFold<T, true>{o, v});
        return launch<T>("argmin", x, g, ArgFold<T, false>{o, v});
      }
    }
  });
}

void var_cuda(const Tensor& x, const std::vector<bool>& reduced, std::int64_t correction,
              const Tensor& out) {
  const Geometry g = make_geometry("var", x, reduced);
  QGRAD_CHECK(out.is_contiguous() && out.numel() == g.K && out.dtype() == x.dtype(), ValueError,
              "var: output must be contiguous ", dtype_name(x.dtype()), " with ", g.K,
              " elements, got ", dtype_name(out.dtype()), " of shape ", out.shape());
  if (g.K == 0) return;
  if (g.R == 0) {
    Tensor(out).fill_(std::numeric_limits<double>::quiet_NaN());  // as torch: mean of nothing
    return;
  }
  // Divisor max(0, N - correction): 0 gives inf or NaN, as torch.
  const double denom = static_cast<double>(std::max<std::int64_t>(0, g.R - correction));
  const Tensor centre = empty({g.K}, TensorOptions().dtype(kFloat64).device(x.device()));
  QGRAD_DISPATCH_FLOAT(x.dtype(), "var", [&] {
    using T = scalar_t;
    auto* sums = static_cast<double*>(centre.raw_data());
    launch<T>("var", x, g, SumFold<T, double>{sums});
    launch<T>("var", x, g,
              SqDevFold<T>{static_cast<T*>(out.raw_data()), sums, static_cast<double>(g.R), denom});
  });
}

void sum_cuda(const Tensor& x, const std::vector<bool>& reduced, const Tensor& out) {
  reduce_cuda(ReduceOp::Sum, x, reduced, out, Tensor());
}

}  // namespace

void register_reduce_cuda_kernels(KernelRegistry& r) {
  r.table(kReduceKernels).define(DeviceType::CUDA, &reduce_cuda, kAllDTypes);
  r.table(kVarKernels).define(DeviceType::CUDA, &var_cuda, kFloatingDTypes);
  r.table(kSumKernels).define(DeviceType::CUDA, &sum_cuda, kAllDTypes);
}

}  // namespace qgrad
