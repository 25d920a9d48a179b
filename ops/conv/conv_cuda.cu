// CUDA conv2d kernels on cuDNN's convolution API: forward (cudnnConvolutionForward, then
// cudnnAddTensor for the bias) and backward data, filter and bias, with groups, stride, padding
// and dilation, for float32 and float64 in packed NCHW. The math type is CUDNN_FMA_MATH, never
// TF32 tensor cores, so float32 results match the CPU's to float32 rounding. Each pass's
// algorithm comes from cuDNN's heuristics (cudnnGet*Algorithm_v7), the first one that cuDNN
// supports for the geometry, cached per geometry; with deterministic_algorithms()
// (core/deterministic.h) only algorithms cuDNN reports as deterministic are taken, and the
// atomics-based backward ones (data ALGO_0, filter ALGO_0 and ALGO_3) never. The forward keeps
// no state for the backward (*state stays null): cuDNN needs nothing beyond x, w and gy.
// Workspaces come from the caching allocator on the same stream. Built only with cuDNN.
#ifdef QGRAD_WITH_CUDNN

#include <array>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <mutex>
#include <vector>

#include "core/allocator.h"
#include "core/cuda_stream.h"
#include "core/deterministic.h"
#include "ops/conv/conv_kernels.h"
#include "ops/cudnn/cudnn_context.h"

namespace qgrad {

namespace {

enum class Pass { Forward, BackwardData, BackwardFilter };

// Everything cuDNN is told about one convolution.
struct ConvDescriptors {
  cudnn::TensorDescriptor x, y;
  cudnn::FilterDescriptor w;
  cudnn::ConvolutionDescriptor conv;
};

ConvDescriptors make_descriptors(const Conv2dGeometry& g, DType dtype, const char* op) {
  using cudnn::to_int;
  ConvDescriptors d{cudnn::nchw_descriptor(dtype, g.n, g.c, g.h, g.w, op),
                    cudnn::nchw_descriptor(dtype, g.n, g.o, g.oh, g.ow, op),
                    cudnn::FilterDescriptor(), cudnn::ConvolutionDescriptor()};
  const cudnnDataType_t t = cudnn::data_type(dtype, op);
  QGRAD_CUDNN_CHECK(cudnnSetFilter4dDescriptor(
                        d.w.get(), t, CUDNN_TENSOR_NCHW, to_int(g.o, op, "out channels"),
                        to_int(g.c / g.groups, op, "in channels per group"),
                        to_int(g.kh, op, "kernel height"), to_int(g.kw, op, "kernel width")),
                    op, "weight [", g.o, ", ", g.c / g.groups, ", ", g.kh, ", ", g.kw, "]");
  // Accumulation in the data's own type (cuDNN's "true" float/double configurations).
  QGRAD_CUDNN_CHECK(
      cudnnSetConvolution2dDescriptor(d.conv.get(), to_int(g.ph, op, "padding"),
                                      to_int(g.pw, op, "padding"), to_int(g.sh, op, "stride"),
                                      to_int(g.sw, op, "stride"), to_int(g.dh, op, "dilation"),
                                      to_int(g.dw, op, "dilation"), CUDNN_CROSS_CORRELATION, t),
      op, "padding (", g.ph, ", ", g.pw, "), stride (", g.sh, ", ", g.sw, "), dilation (", g.dh,
      ", ", g.dw, ")");
  QGRAD_CUDNN_CHECK(cudnnSetConvolutionGroupCount(d.conv.get(), to_int(g.groups, op, "groups")), op,
                    "groups ", g.groups);
  // FMA math: no TF32 (it would round float32 operands to 10 mantissa bits).
  QGRAD_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv.get(), CUDNN_FMA_MATH), op);
  // cuDNN's output size must be conv2d's (both floor); a mismatch would be a geometry bug.
  int on = 0, oc = 0, oh = 0, ow = 0;
  QGRAD_CUDNN_CHECK(
      cudnnGetConvolution2dForwardOutputDim(d.conv.get(), d.x.get(), d.w.get(), &on, &oc, &oh, &ow),
      op, "output size");
  QGRAD_CHECK(on == g.n && oc == g.o && oh == g.oh && ow == g.ow, ShapeError, op,
              ": cuDNN's output [", on, ", ", oc, ", ", oh, ", ", ow, "] is not conv2d's [", g.n,
              ", ", g.o, ", ", g.oh, ", ", g.ow, "]");
  return d;
}

// An algorithm and the workspace it needs.
struct AlgoChoice {
  int algo = 0;
  std::size_t workspace = 0;
};

// The chosen algorithm per (device, dtype, pass, deterministic, geometry). Explicit cache,
// mutex-guarded; the heuristics query costs more than a small convolution.
class AlgoCache {
 public:
  using Key = std::array<std::int64_t, 20>;
  template <typename Pick>
  AlgoChoice get(const Key& key, Pick pick) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = map_.find(key);
      if (it != map_.end()) return it->second;
    }
    const AlgoChoice c = pick();  // outside the lock: it calls into cuDNN
    std::lock_guard<std::mutex> lock(mutex_);
    return map_.emplace(key, c).first->second;
  }

 private:
  std::mutex mutex_;
  std::map<Key, AlgoChoice> map_;
};

AlgoCache& algo_cache() {
  static AlgoCache cache;
  return cache;
}

AlgoCache::Key cache_key(const Conv2dGeometry& g, DType dtype, int device, Pass pass,
                         bool deterministic) {
  // clang-format off
  return {device, static_cast<std::int64_t>(dtype), static_cast<std::int64_t>(pass), deterministic,
          g.n, g.c, g.h, g.w, g.o, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.groups,
          g.oh, g.ow};
  // clang-format on
}

// The first of cuDNN's heuristic results (best expected first) that succeeds, is allowed under
// the deterministic switch, does not ask for tensor-core math, and whose workspace size cuDNN can
// report (for the descriptor's FMA math type); then the fallbacks, in order. `heuristics(count,
// returned, perf)` is the _v7 query, `workspace(algo, bytes)` the workspace size query.
template <typename Perf, typename Algo, typename Heuristics, typename Workspace>
AlgoChoice pick_algo(const char* op, int max_count, bool deterministic,
                     std::initializer_list<Algo> never_deterministic,
                     std::initializer_list<Algo> fallbacks, Heuristics heuristics,
                     Workspace workspace) {
  std::vector<Perf> perf(static_cast<std::size_t>(max_count));
  int returned = 0;
  QGRAD_CUDNN_CHECK(heuristics(max_count, &returned, perf.data()), op, "algorithm heuristics");
  auto allowed = [&](Algo a) {
    for (Algo bad : never_deterministic)
      if (a == bad) return false;
    return true;
  };
  for (int i = 0; i < returned; ++i) {
    const Perf& p = perf[static_cast<std::size_t>(i)];
    if (p.status != CUDNN_STATUS_SUCCESS) continue;
    // Tensor-core entries compute in TF32 or half precision: never for float32/float64 data.
    if (p.mathType == CUDNN_TENSOR_OP_MATH || p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
      continue;
    if (deterministic && (p.determinism != CUDNN_DETERMINISTIC || !allowed(p.algo))) continue;
    std::size_t bytes = 0;
    if (workspace(p.algo, &bytes) != CUDNN_STATUS_SUCCESS) continue;
    return {static_cast<int>(p.algo), bytes};
  }
  for (Algo a : fallbacks) {
    std::size_t bytes = 0;
    if (workspace(a, &bytes) == CUDNN_STATUS_SUCCESS) return {static_cast<int>(a), bytes};
  }
  throw DeviceError(detail::concat(op, ": cuDNN offers no usable algorithm for this geometry",
                                   deterministic ? " (deterministic algorithms only)" : ""));
}

AlgoChoice forward_algo(cudnnHandle_t h, const ConvDescriptors& d, const Conv2dGeometry& g,
                        DType dtype, int device) {
  const bool det = deterministic_algorithms();
  return algo_cache().get(cache_key(g, dtype, device, Pass::Forward, det), [&] {
    return pick_algo<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(
        "conv2d", CUDNN_CONVOLUTION_FWD_ALGO_COUNT, det, {},
        {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_GEMM},
        [&](int count, int* returned, cudnnConvolutionFwdAlgoPerf_t* perf) {
          return cudnnGetConvolutionForwardAlgorithm_v7(h, d.x.get(), d.w.get(), d.conv.get(),
                                                        d.y.get(), count, returned, perf);
        },
        [&](cudnnConvolutionFwdAlgo_t a, std::size_t* bytes) {
          return cudnnGetConvolutionForwardWorkspaceSize(h, d.x.get(), d.w.get(), d.conv.get(),
                                                         d.y.get(), a, bytes);
        });
  });
}

AlgoChoice backward_data_algo(cudnnHandle_t h, const ConvDescriptors& d, const Conv2dGeometry& g,
                              DType dtype, int device) {
  const bool det = deterministic_algorithms();
  return algo_cache().get(cache_key(g, dtype, device, Pass::BackwardData, det), [&] {
    return pick_algo<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(
        "conv2d backward", CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, det,
        {CUDNN_CONVOLUTION_BWD_DATA_ALGO_0}, {CUDNN_CONVOLUTION_BWD_DATA_ALGO_1},
        [&](int count, int* returned, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
          return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w.get(), d.y.get(), d.conv.get(),
                                                             d.x.get(), count, returned, perf);
        },
        [&](cudnnConvolutionBwdDataAlgo_t a, std::size_t* bytes) {
          return cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w.get(), d.y.get(), d.conv.get(),
                                                              d.x.get(), a, bytes);
        });
  });
}

AlgoChoice backward_filter_algo(cudnnHandle_t h, const ConvDescriptors& d, const Conv2dGeometry& g,
                                DType dtype, int device) {
  const bool det = deterministic_algorithms();
  return algo_cache().get(cache_key(g, dtype, device, Pass::BackwardFilter, det), [&] {
    return pick_algo<cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t>(
        "conv2d backward", CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, det,
        {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3},
        {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1},
        [&](int count, int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
          return cudnnGetConvolutionBackwardFilterAlgorithm_v7(
              h, d.x.get(), d.y.get(), d.conv.get(), d.w.get(), count, returned, perf);
        },
        [&](cudnnConvolutionBwdFilterAlgo_t a, std::size_t* bytes) {
          return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x.get(), d.y.get(),
                                                                d.conv.get(), d.w.get(), a, bytes);
        });
  });
}

// `t` as packed data at an address aligned to 16 bytes. A contiguous view can start anywhere
// in its storage (a narrowed batch), and not every cuDNN kernel takes a misaligned pointer;
// clone() gives a fresh block (the allocator's blocks are 256-byte aligned).
Tensor packed(const Tensor& t) {
  Tensor c = t.contiguous();
  if (reinterpret_cast<std::uintptr_t>(c.raw_data()) % 16 != 0) c = c.clone();
  return c;
}

// Workspace memory from the caching allocator: freed (returned to the cache) when the call
// returns, which is safe because only later work on the same stream can reuse it.
DataPtr workspace(std::size_t bytes, Device device) {
  return allocate(bytes, device);
}

void conv2d_forward_cuda(const Conv2dGeometry& g, const Tensor& x_in, const Tensor& w_in,
                         const Tensor& bias, const Tensor& y,
                         std::shared_ptr<Conv2dForwardState>* /*state: not needed by cuDNN*/,
                         bool /*keep_input*/, bool /*keep_weights*/) {
  if (y.numel() == 0) return;
  const char* op = "conv2d";
  const DType dtype = y.dtype();
  const int dev = y.device().index;
  const Tensor x = packed(x_in), w = packed(w_in);
  const CudaDeviceGuard guard(dev);
  const cudnnHandle_t h = cudnn::handle(dev);
  const ConvDescriptors d = make_descriptors(g, dtype, op);
  const AlgoChoice a = forward_algo(h, d, g, dtype, dev);
  const DataPtr ws = workspace(a.workspace, y.device());
  QGRAD_CUDNN_CHECK(
      cudnnConvolutionForward(h, cudnn::kOne.for_type(dtype), d.x.get(), x.raw_data(), d.w.get(),
                              w.raw_data(), d.conv.get(),
                              static_cast<cudnnConvolutionFwdAlgo_t>(a.algo), ws.get(), a.workspace,
                              cudnn::kZero.for_type(dtype), d.y.get(), y.raw_data()),
      op, "input ", x.shape(), ", weight ", w.shape(), ", algorithm ", a.algo);
  if (bias.defined()) {
    const Tensor b = packed(bias);
    const cudnn::TensorDescriptor bd = cudnn::nchw_descriptor(dtype, 1, g.o, 1, 1, op);
    // y = 1 * bias (broadcast over n, h, w) + 1 * y.
    QGRAD_CUDNN_CHECK(cudnnAddTensor(h, cudnn::kOne.for_type(dtype), bd.get(), b.raw_data(),
                                     cudnn::kOne.for_type(dtype), d.y.get(), y.raw_data()),
                      op, "bias ", b.shape(), ", output ", y.shape());
  }
}

void conv2d_backward_cuda(const Conv2dGeometry& g, const Tensor& gy_in, const Tensor& x_in,
                          const Tensor& w_in, const Conv2dForwardState* /*state: unused*/,
                          const Tensor& gx, const Tensor& gw, const Tensor& gb) {
  const char* op = "conv2d backward";
  if (gy_in.numel() == 0) {  // nothing to sum (empty batch or output): zero gradients
    for (const Tensor& t : {gx, gw, gb})
      if (t.defined()) Tensor(t).zero_();
    return;
  }
  const DType dtype = gy_in.dtype();
  const int dev = gy_in.device().index;
  const Tensor gy = packed(gy_in);
  const CudaDeviceGuard guard(dev);
  const cudnnHandle_t h = cudnn::handle(dev);
  const ConvDescriptors d = make_descriptors(g, dtype, op);
  const void* one = cudnn::kOne.for_type(dtype);
  const void* zero = cudnn::kZero.for_type(dtype);
  if (gx.defined()) {
    QGRAD_CHECK(w_in.defined(), AutogradError, op, ": the input's gradient needs the weights");
    const Tensor w = packed(w_in);
    const AlgoChoice a = backward_data_algo(h, d, g, dtype, dev);
    const DataPtr ws = workspace(a.workspace, gy.device());
    QGRAD_CUDNN_CHECK(cudnnConvolutionBackwardData(
                          h, one, d.w.get(), w.raw_data(), d.y.get(), gy.raw_data(), d.conv.get(),
                          static_cast<cudnnConvolutionBwdDataAlgo_t>(a.algo), ws.get(), a.workspace,
                          zero, d.x.get(), gx.raw_data()),
                      op, "data: gy ", gy.shape(), ", weight ", w.shape(), ", algorithm ", a.algo);
  }
  if (gw.defined()) {
    QGRAD_CHECK(x_in.defined(), AutogradError, op, ": the weights' gradient needs the input");
    const Tensor x = packed(x_in);
    const AlgoChoice a = backward_filter_algo(h, d, g, dtype, dev);
    const DataPtr ws = workspace(a.workspace, gy.device());
    QGRAD_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
                          h, one, d.x.get(), x.raw_data(), d.y.get(), gy.raw_data(), d.conv.get(),
                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(a.algo), ws.get(),
                          a.workspace, zero, d.w.get(), gw.raw_data()),
                      op, "filter: input ", x.shape(), ", gy ", gy.shape(), ", algorithm ", a.algo);
  }
  if (gb.defined()) {
    const cudnn::TensorDescriptor bd = cudnn::nchw_descriptor(dtype, 1, g.o, 1, 1, op);
    QGRAD_CUDNN_CHECK(cudnnConvolutionBackwardBias(h, one, d.y.get(), gy.raw_data(), zero, bd.get(),
                                                   gb.raw_data()),
                      op, "bias: gy ", gy.shape());
  }
}

}  // namespace

void register_conv_cuda_kernels(KernelRegistry& r) {
  r.table(kConv2dForwardKernels).define(DeviceType::CUDA, &conv2d_forward_cuda, kFloatingDTypes);
  r.table(kConv2dBackwardKernels).define(DeviceType::CUDA, &conv2d_backward_cuda, kFloatingDTypes);
}

}  // namespace qgrad

#endif  // QGRAD_WITH_CUDNN
